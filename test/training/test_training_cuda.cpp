// Compiled training on a GPU ([cuda]: skipped without one): gradients of the lowered backward formulas
// and training loops against eager on the same device, float64 where the comparison must be tight and
// bfloat16 where the dtype's own rounding is the point.
#include "training/call_semantics_checks.h"
#include "training/optim_checks.h"
#include "training/random_cnn.h"
#include "training/random_training.h"
#include "training/training_support.h"

#include <c10/cuda/CUDAFunctions.h>
#include <torch/optim/adamw.h>

using namespace jitc::testing;

namespace {

bool have_gpu() { return at::hasCUDA() && c10::cuda::device_count() > 0; }

at::Tensor cuda64(at::IntArrayRef sizes) { return at::randn(sizes, at::dtype(at::kDouble).device(at::kCUDA)); }

}  // namespace

TEST_CASE("CUDA training: gradients of activations, norms, softmax and losses equal eager's", "[cuda][training]") {
  if (!have_gpu()) return;
  at::manual_seed(0);
  const at::Tensor target = at::randint(0, 6, {5}, at::dtype(at::kLong).device(at::kCUDA));
  check_gradients(
      [target](const Tensors& x) {
        at::Tensor h = at::gelu(x[0]) + at::silu(x[0]) * at::tanh(x[0]) + at::sigmoid(x[0]);
        h = at::layer_norm(at::relu(h) + at::hardtanh(h, -1, 2), {6}, x[1], x[2]);
        return at::cross_entropy_loss(at::softmax(h, 1) * 3 + h.matmul(x[3]), target);
      },
      {cuda64({5, 6}), cuda64({6}), cuda64({6}), cuda64({6, 6})}, {}, 1e-9);
  check_gradients([](const Tensors& x) { return (x[0] * x[1]).sum(0) + x[0].amax(1).mean(); }, {cuda64({7, 3}), cuda64({3})}, {}, 1e-9);
}

TEST_CASE("CUDA training: bfloat16 gradients stay within bfloat16's rounding of eager's", "[cuda][training]") {
  if (!have_gpu()) return;
  at::manual_seed(1);
  auto bf16 = [](at::IntArrayRef sizes) { return at::randn(sizes, at::dtype(at::kBFloat16).device(at::kCUDA)); };
  check_gradients([](const Tensors& x) { return at::gelu(x[0].matmul(x[1])).softmax(-1) * x[2]; },
                  {bf16({8, 16}), bf16({16, 4}), bf16({4})}, {}, 3e-2);
}

TEST_CASE("CUDA training: a CNN with batch norm and a GPT-style transformer train as in eager", "[cuda][training]") {
  if (!have_gpu()) return;
  at::manual_seed(2);
  const auto cuda = at::TensorOptions().device(at::kCUDA);
  {
    auto data = [cuda] {
      return std::pair{at::randn({4, 3, 8, 8}, cuda.dtype(at::kDouble)), at::randint(0, 10, {4}, cuda.dtype(at::kLong))};
    };
    auto loss_of = [](SmallCnn& m, const at::Tensor& x, const at::Tensor& y) { return at::cross_entropy_loss(m.forward(x), y); };
    auto a = std::make_shared<SmallCnn>(), b = std::make_shared<SmallCnn>();
    a->to(at::kCUDA, at::kDouble);
    b->to(at::kCUDA, at::kDouble);
    train_side_by_side(a, b, data, loss_of, 4, 1e-9);
  }
  auto data = [cuda] {
    return std::pair{at::randint(0, 50, {2, 6}, cuda.dtype(at::kLong)), at::randint(0, 50, {12}, cuda.dtype(at::kLong))};
  };
  auto loss_of = [](TinyGpt& m, const at::Tensor& x, const at::Tensor& y) {
    return at::cross_entropy_loss(m.forward(x).view({-1, 50}), y);
  };
  auto a = std::make_shared<TinyGpt>(0.1), b = std::make_shared<TinyGpt>(0.1);
  a->to(at::kCUDA, at::kDouble);
  b->to(at::kCUDA, at::kDouble);
  train_side_by_side(a, b, data, loss_of, 4, 1e-9);
}

TEST_CASE("CUDA training: batch norms in bfloat16 and half compile, within the dtype's rounding of eager", "[cuda][training]") {
  if (!have_gpu()) return;
  for (auto dtype : {at::kBFloat16, at::kHalf}) {
    INFO(c10::toString(dtype));
    check_reduced_precision_batch_norms(at::kCUDA, dtype);
  }
}

TEST_CASE("CUDA training over changing batch sizes: two compiles, then the symbolic forward and backward", "[cuda][training]") {
  if (!have_gpu()) return;
  train_over_changing_batch_sizes(at::kCUDA);
}

// The random differential test of compiled training (random_training.h) with the CUDA code generator:
// normalizations in the last dim only, as the inference test's CUDA case.
TEST_CASE("CUDA training: random graphs of pointwise reduction and view ops, compiled gradients equal eager's",
          "[cuda][training][random]") {
  if (!have_gpu()) return;
  using namespace jitc::testing::random_training;
  const auto [first, end] = jitc::testing::random_graphs::seed_range(300);
  for (uint32_t seed = first; seed < end; ++seed) check_gradients(generate(seed, Normalizations::kLastDim), at::kCUDA);
  for (uint32_t seed = first; seed < end; ++seed)
    check_gradients(generate(seed, Normalizations::kLastDim, InPlace::kIntermediates), at::kCUDA);
}

// Random convolutional networks (random_cnn.h) in float32 on the GPU: the CUDA lowering of their norms,
// pools, upsampling and losses, and ATen's CUDA kernels where they stay extern.
TEST_CASE("CUDA training: random convolutional networks train and infer compiled as in eager", "[cuda][training][random]") {
  if (!have_gpu()) return;
  const auto [first, end] = jitc::testing::random_graphs::seed_range(60);
  for (uint32_t seed = first; seed < end; ++seed) jitc::testing::random_cnn::check_training(seed, at::kCUDA);
  for (uint32_t seed = first; seed < end; ++seed)
    for (bool train : {false, true}) jitc::testing::random_cnn::check_inference(seed, at::kCUDA, train);
}

// Dropout (native_dropout) and RReLU (rrelu_with_noise's functional twin) draw on the GPU what eager
// draws for the same seed, compiled, with and without grad.
TEST_CASE("CUDA training: dropout and RReLU compile and draw eager's masks and slopes", "[cuda][training]") {
  if (!have_gpu()) return;
  SECTION("dropout") {
    check_draws_as_eager(at::kCUDA, [](const at::Tensor& x, const at::Tensor& w) {
      return at::dropout(at::matmul(x, w), 0.3, /*train=*/true).sigmoid().sum();
    });
  }
  SECTION("RReLU") {
    check_draws_as_eager(at::kCUDA, [](const at::Tensor& x, const at::Tensor& w) {
      return at::rrelu(at::matmul(x, w), 0.1, 0.4, /*training=*/true).sin().sum();
    });
  }
}

TEST_CASE("CUDA training: a Q-learning loss that picks actions by integer indexing compiles, with eager's gradients", "[cuda][training]") {
  if (!have_gpu()) return;
  check_q_learning(at::kCUDA);
}

TEST_CASE("CUDA training: a CNN fed channels-last inputs trains with its batch norms compiled, as in eager", "[cuda][training]") {
  if (!have_gpu()) return;
  check_channels_last_cnn(at::kCUDA);
}

TEST_CASE("CUDA training: a parameter first read under a NoGradGuard (embedding max_norm) trains compiled as in eager",
          "[cuda][training]") {
  if (!have_gpu()) return;
  check_parameter_first_read_without_grad(at::kCUDA);
}

TEST_CASE("CUDA training: a callable that turns grad mode on inside a call made without grad returns what eager returns",
          "[cuda][training]") {
  if (!have_gpu()) return;
  check_grad_mode_turned_on_inside(at::kCUDA);
}

TEST_CASE("CUDA training: outputs that are views of values computed inside the call can be written in place afterwards",
          "[cuda][training]") {
  if (!have_gpu()) return;
  check_view_outputs_written_after_the_call(at::kCUDA);
}

TEST_CASE("CUDA training: torch::optim steps called through a compiled function follow eager's, and their state stays usable",
          "[cuda][training]") {
  if (!have_gpu()) return;
  check_compiled_torch_optim_steps(at::kCUDA);
}

TEST_CASE(
    "CUDA training: whole training steps with zero_grad and backward and a torch::optim step inside follow eager's from a cold or a warm "
    "start",
    "[cuda][training]") {
  if (!have_gpu()) return;
  check_whole_training_steps(at::kCUDA);
}

TEST_CASE("CUDA training: a step that reads .grad() of its tensor arguments compiles with eager's updates", "[cuda][training]") {
  if (!have_gpu()) return;
  check_step_reading_argument_grads(at::kCUDA);
  check_step_resetting_argument_grads(at::kCUDA);
}

TEST_CASE(
    "CUDA training: a training forward updating a buffer with a decay counted in C++ runs eagerly after its first hit, a constant decay "
    "compiles",
    "[cuda][training]") {
  if (!have_gpu()) return;
  check_training_state_updates(at::kCUDA);
}

TEST_CASE("CUDA training: C++ code in a compiled forward runs once on a call that traces it in grad mode, not again for its result",
          "[cuda][training]") {
  if (!have_gpu()) return;
  check_forward_code_runs_once_per_call(at::kCUDA);
}

TEST_CASE(
    "CUDA training: a parameter first read without grad, grad mode turned on inside, view outputs and torch::optim steps hold in "
    "every mode",
    "[cuda][training]") {
  if (!have_gpu()) return;
  check_call_semantics_in_every_mode(at::kCUDA);
}

TEST_CASE("CUDA jitc::optim: AdamW, Adam, SGD, RMSprop and Adagrad steps follow torch::optim's, in the default mode and with CUDA graphs",
          "[cuda][training][optim]") {
  if (!have_gpu()) return;
  check_optimizers_follow_torch(at::kCUDA);
  jitc::Options graphs = built_on_the_call();
  graphs.mode = jitc::Mode::kReduceOverhead;
  check_optimizers_follow_torch(at::kCUDA, graphs);
  check_schedules_groups_and_skipped_parameters(at::kCUDA, graphs);
}

TEST_CASE(
    "CUDA jitc::optim: schedules, param groups, skipped parameters, save and load, steps inside a compiled training step, a group over two "
    "devices",
    "[cuda][training][optim]") {
  if (!have_gpu()) return;
  check_schedules_groups_and_skipped_parameters(at::kCUDA);
  check_save_and_load(at::kCUDA);
  check_step_inside_a_compiled_training_step(at::kCUDA);
  check_group_over_devices(at::kCUDA);
}

TEST_CASE(
    "CUDA jitc::optim: steps inside a compiled training step see the learning rate set before each call, in the default mode and "
    "with CUDA graphs",
    "[cuda][training][optim]") {
  if (!have_gpu()) return;
  jitc::Options graphs = built_on_the_call();
  graphs.mode = jitc::Mode::kReduceOverhead;
  for (const jitc::Options& options : {jitc::Options{}, graphs}) {
    check_options_set_between_compiled_steps<jitc::optim::AdamW, torch::optim::AdamW>(
        at::kCUDA, torch::optim::AdamWOptions(1e-2),
        [](torch::optim::AdamWOptions& o) {
          o.betas({0.8, 0.99});
        },
        options);
    check_options_set_between_compiled_steps<jitc::optim::SGD, torch::optim::SGD>(
        at::kCUDA, torch::optim::SGDOptions(0.1).momentum(0.9), [](torch::optim::SGDOptions& o) { o.momentum(0.5); }, options);
  }
}

TEST_CASE("CUDA jitc::optim: random options, param groups, skipped gradients and learning-rate changes follow torch::optim's",
          "[cuda][training][optim]") {
  if (!have_gpu()) return;
  int64_t hits = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) hits += RandomOptimizerRun(seed, at::kCUDA).run();
  CHECK(hits >= 100);
}
