// The model suite (benchmarks/models/models.h) at small shapes with the published structures: every model
// compiled with jitc gives eager's result, on a replay as on the first call, with no eager fallback. The
// suite's speed is measured by bench_models, not here.
#include "models/architectures.h"
#include "models/models.h"
#include "support/log_capture.h"
#include "support/parity.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <torch/nn/module.h>
#include <torch/optim/sgd.h>

#include <functional>
#include <optional>
#include <string>

namespace {

bool have_gpu() { return at::hasCUDA(); }

// Weights made under InferenceMode are inference tensors (without version counters: they are not
// prepacked); made under NoGradGuard, as a serving process loads a model before serving, they are
// prepacked once (frozen_weights.h).
std::vector<jitc::bench::Model> models_with(bool inference_tensor_weights, c10::Device device) {
  std::optional<c10::InferenceMode> inference;
  std::optional<at::NoGradGuard> no_grad;
  if (inference_tensor_weights) inference.emplace();
  else no_grad.emplace();
  return jitc::bench::make_models(jitc::bench::ModelScale::kTest, device);
}

void check_the_suite(c10::Device device, bool inference_tensor_weights = true) {
  const auto models = models_with(inference_tensor_weights, device);
  c10::InferenceMode inference;
  for (const auto& model : models) {
    INFO(model.name << " on " << device);
    const at::Tensor x = model.make_input();
    auto compiled = jitc::compile(model.forward);
    auto call = [&](const at::Tensor& input) { return compiled(input); };
    const at::Tensor expected = jitc::bench::results_from_start(model, model.forward, x);
    // The first time traces (and runs eagerly), the second replays the compiled program, or traces again
    // where the model updates captured tensors (Stats::first_hit_checks), the third replays; a model with
    // state (a decoder's KV cache) compares its first three steps from a reset.
    for (int time = 0; time < 3; ++time)
      CHECK(jitc::testing::difference(jitc::bench::results_from_start(model, call, x), expected, {1e-4, 1e-5}) == "");
    const auto stats = compiled.stats();
    CHECK(stats.eager_fallbacks == 0);
    CHECK(stats.hits >= 1);
    CHECK(stats.recompiles == 0);
  }
}

}  // namespace

TEST_CASE("the model suite's models match eager at small shapes", "[models]") { check_the_suite(c10::kCPU); }

TEST_CASE("the model suite's models match eager with weights made before inference mode (prepacked once)", "[models]") {
  check_the_suite(c10::kCPU, /*inference_tensor_weights=*/false);
}

TEST_CASE("CUDA: the model suite's models match eager at small shapes", "[cuda][models]") {
  if (have_gpu()) check_the_suite(c10::kCUDA);
}

namespace {

// Two copies of a model made from one seed, one trained through a compiled loss, three steps of SGD with
// momentum from the same data (and the same draws, for a model that draws): losses and parameters agree
// at every step, and nothing falls back (the LSTM's mkldnn workspace exists only in grad mode; DLRM's
// saved values are views of one tensor of ids). The CNNs train in float64 on [4, 3, 64, 64]: in float32
// on [2, 3, 32, 32] their last batch norms see two elements per channel, and parameters of the compiled
// and the eager copy differed by 1e-4 after one step (MobileNetV2's grew from 0.5 to 47).
// compiles=false: a model jitc cannot trace for training runs eagerly, named in one warning.
void train_side_by_side(const std::string& name, const std::function<jitc::bench::Trainable()>& make,
                        const std::function<at::Tensor()>& input, const std::function<at::Tensor(const at::Tensor&)>& loss_of,
                        bool compiles = true) {
  INFO(name);
  jitc::testing::LogCapture logs;
  at::manual_seed(1);
  const jitc::bench::Trainable eager = make();
  at::manual_seed(1);
  const jitc::bench::Trainable mine = make();
  torch::optim::SGD eager_optimizer(eager.module->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  torch::optim::SGD optimizer(mine.module->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  auto compiled = jitc::compile([&](const at::Tensor& x) { return loss_of(mine.forward(x)); });
  const int steps = 3;
  for (int step = 0; step < steps; ++step) {
    INFO("step " << step);
    const at::Tensor x = input();
    at::manual_seed(10 + step);
    eager_optimizer.zero_grad();
    const at::Tensor want = loss_of(eager.forward(x));
    want.backward();
    eager_optimizer.step();
    at::manual_seed(10 + step);
    optimizer.zero_grad();
    const at::Tensor got = compiled(x);
    got.backward();
    optimizer.step();
    CHECK(got.item<double>() == Approx(want.item<double>()).epsilon(1e-5));
    const auto a = eager.module->parameters(), b = mine.module->parameters();
    for (size_t k = 0; k < a.size(); ++k) CHECK(at::allclose(b[k], a[k], 1e-4, 1e-5));
  }
  INFO("logs: " << logs.text());
  if (!compiles) {
    CHECK(compiled.stats().compiles == 0);
    CHECK(logs.text().find("eagerly: grad mode is on and its training trace failed") != std::string::npos);
    return;
  }
  CHECK(compiled.stats().compiles == 1);
  // A graph updating captured tensors (batch-norm statistics) is traced again at its first hit instead of a hit.
  CHECK(compiled.stats().hits + compiled.stats().first_hit_checks == steps - 1);
  // No fallback of the forward or the backward (a slow compile's progress lines may appear).
  CHECK(logs.text().find("eager") == std::string::npos);
}

}  // namespace

namespace {

void train_the_suite(c10::Device device) {
  using namespace jitc::bench;
  const Placement on{device, c10::kFloat}, on64{device, c10::kDouble};
  const auto ids = at::device(device).dtype(at::kLong), floats = at::device(device), doubles = at::device(device).dtype(at::kDouble);
  const at::Tensor targets = at::randint(97, {16}, ids), clicks = at::randint(2, {4, 1}, floats);
  train_side_by_side(
      "bert", [&] { return train_bert(on, 2, 32, 4, 64, 97, 32); },
      [&] {
        return at::randint(97, {2, 16}, ids);
      },
      [](const at::Tensor& pooled) { return pooled.pow(2).mean(); });
  train_side_by_side(
      "lstm_lm", [&] { return train_lstm_lm(on, 97, 16, 2); },
      [&] {
        return at::randint(97, {2, 8}, ids);
      },
      [&](const at::Tensor& logits) {
        return at::cross_entropy_loss(logits.reshape({-1, 97}), targets);
      },
      /*compiles=*/!device.is_cuda());  // cuDNN's LSTM reads its weights' data pointers: a trace cannot
  train_side_by_side(
      "vae", [&] { return train_vae(on, 64, 32, 8); },
      [&] {
        return at::rand({4, 64}, floats);
      },
      [](const at::Tensor& loss) { return loss / 4; });
  const at::Tensor labels = at::randint(10, {4}, ids);
  // The CNNs: float64 images of [4, 3, 64, 64], cross-entropy over 10 classes.
  auto train_cnn = [&](const char* name, const std::function<jitc::bench::Trainable()>& make) {
    train_side_by_side(
        name, make, [&] { return at::randn({4, 3, 64, 64}, doubles); },
        [&](const at::Tensor& logits) { return at::cross_entropy_loss(logits, labels); });
  };
  train_cnn("resnet18", [&] { return train_resnet(on64, 18, 8, 10); });
  train_cnn("mobilenet_v2", [&] { return train_mobilenet_v2(on64, 4, 10); });
  train_cnn("shufflenet_v2", [&] { return train_shufflenet_v2(on64, 4, 10); });
  train_side_by_side(
      "unet", [&] { return train_unet(on64, 4, 2); },
      [&] {
        return at::randn({2, 3, 32, 32}, doubles);
      },
      [](const at::Tensor& out) { return out.pow(2).mean(); });
  train_side_by_side(
      "gpt", [&] { return train_gpt(on, 2, 32, 4, 97, 64); },
      [&] {
        return at::randint(97, {2, 8}, ids);
      },
      [&](const at::Tensor& logits) {
        return at::cross_entropy_loss(logits.reshape({-1, 97}), targets);
      });
  train_side_by_side(
      "llama", [&] { return train_llama(on, 2, 32, 4, 2, 97); },
      [&] {
        return at::randint(97, {2, 8}, ids);
      },
      [&](const at::Tensor& logits) {
        return at::cross_entropy_loss(logits.reshape({-1, 97}), targets);
      });
  const DlrmShape shape{.batch = 4, .dense = 5, .tables = 3, .rows = 50, .dim = 8, .bag = 2};
  train_side_by_side(
      "dlrm", [&] { return train_dlrm(on, shape); },
      [&] {
        return at::randint(shape.rows, {4, 3, 2}, ids);
      },
      [&](const at::Tensor& p) { return at::binary_cross_entropy(p, clicks); });
}

}  // namespace

TEST_CASE("the suite's models train through compiled losses as in eager", "[models][training]") { train_the_suite(c10::kCPU); }

TEST_CASE("CUDA: the suite's models train through compiled losses as in eager", "[cuda][models][training]") {
  if (have_gpu()) train_the_suite(c10::kCUDA);
}
