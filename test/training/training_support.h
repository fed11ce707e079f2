// Helpers of the training tests (test_training.cpp on the CPU, test_training_cuda.cpp on a GPU): gradient
// parity of a compiled function against eager, small models, and training two copies of a model side by
// side, one through a compiled loss.
#pragma once
#include "support/log_capture.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/optim/sgd.h>

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace jitc::testing {

using Tensors = std::vector<at::Tensor>;
using Fn = std::function<at::Tensor(const Tensors&)>;

inline bool close(const at::Tensor& got, const at::Tensor& want, double tol) {
  if (got.defined() != want.defined()) return false;
  if (!got.defined()) return true;
  return got.sizes() == want.sizes() && got.scalar_type() == want.scalar_type() && at::allclose(got, want, tol, tol, true);
}

inline std::string describe(const at::Tensor& got, const at::Tensor& want) {
  if (!got.defined() || !want.defined()) return fmt::format("defined: got {}, want {}", got.defined(), want.defined());
  if (got.sizes() != want.sizes()) return "sizes differ";
  if (got.numel() == 0) return "empty";
  return fmt::format("max abs difference {}", (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>());
}

inline Tensors fresh_leaves(const Tensors& values, const std::vector<bool>& requires_grad) {
  Tensors out;
  for (size_t i = 0; i < values.size(); ++i) out.push_back(values[i].detach().clone().requires_grad_(requires_grad[i]));
  return out;
}

// Output and input gradients of f at `values` (a fixed random tangent), eager or through `compiled`.
inline std::pair<at::Tensor, Tensors> run(const Fn& f, const Tensors& values, const std::vector<bool>& requires_grad,
                                          const at::Tensor& tangent) {
  Tensors leaves = fresh_leaves(values, requires_grad);
  at::Tensor out = f(leaves);
  out.backward(tangent);
  Tensors grads;
  for (const auto& l : leaves) grads.push_back(l.grad());
  return {out.detach(), grads};
}

// Compiled vs eager over `calls` calls: outputs and every input's gradient.
// compiled=false: f's backward reads data (a formula calling item()), so every call in grad mode runs
// eagerly; the values must still be eager's.
inline void check_gradients(const Fn& f, const Tensors& values, std::vector<bool> requires_grad = {}, double tol = 1e-10, int calls = 3,
                            bool compiled_expected = true) {
  if (requires_grad.empty()) requires_grad.assign(values.size(), true);
  auto compiled = jitc::compile([f](const Tensors& xs) { return f(xs); });
  const at::Tensor probe = f(fresh_leaves(values, std::vector<bool>(values.size(), false))).detach();
  const at::Tensor tangent = at::randn_like(probe);
  const auto want = run(f, values, requires_grad, tangent);
  for (int call = 0; call < calls; ++call) {
    const auto got = run([&](const Tensors& xs) { return compiled(xs); }, values, requires_grad, tangent);
    INFO("call " << call << ": output " << describe(got.first, want.first));
    CHECK(close(got.first, want.first, tol));
    for (size_t i = 0; i < values.size(); ++i) {
      INFO("call " << call << ": gradient of input " << i << ": " << describe(got.second[i], want.second[i]));
      CHECK(close(got.second[i], want.second[i], tol));
    }
  }
  const auto stats = compiled.stats();
  CHECK(stats.compiles == (compiled_expected ? 1 : 0));
  CHECK(stats.hits == (compiled_expected ? calls - 1 : 0));
  CHECK(stats.eager_fallbacks == (compiled_expected ? 0 : calls));
}

inline at::Tensor rand64(at::IntArrayRef sizes) { return at::randn(sizes, at::kDouble); }

struct Mlp : torch::nn::Module {
  Mlp() : fc1(register_module("fc1", torch::nn::Linear(8, 16))), fc2(register_module("fc2", torch::nn::Linear(16, 4))) {}
  at::Tensor forward(const at::Tensor& x) { return fc2->forward(at::gelu(fc1->forward(x))); }
  torch::nn::Linear fc1, fc2;
};

inline void copy_parameters(torch::nn::Module& from, torch::nn::Module& to) {
  at::NoGradGuard no_grad;
  auto source = from.parameters();
  auto target = to.parameters();
  for (size_t i = 0; i < source.size(); ++i) target[i].copy_(source[i]);
}

// The largest element difference between two lists of tensors of the same shapes (any dtype).
inline double max_difference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, (a[i].to(at::kDouble) - b[i].to(at::kDouble)).abs().max().item<double>());
  return worst;
}

inline double max_parameter_difference(torch::nn::Module& a, torch::nn::Module& b) {
  return max_difference(a.parameters(), b.parameters());
}

struct SmallCnn : torch::nn::Module {
  SmallCnn()
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1).bias(false)))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(8))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3).padding(1).bias(false)))),
        bn2(register_module("bn2", torch::nn::BatchNorm2d(8))),
        fc(register_module("fc", torch::nn::Linear(8, 10))) {}
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = at::relu(bn1->forward(conv1->forward(x)));
    h = at::max_pool2d(h, {2, 2});
    h = at::relu(bn2->forward(conv2->forward(h)) + h);  // a residual block
    return fc->forward(at::adaptive_avg_pool2d(h, {1, 1}).flatten(1));
  }
  torch::nn::Conv2d conv1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Conv2d conv2;
  torch::nn::BatchNorm2d bn2;
  torch::nn::Linear fc;
};

// MobileNet's block in small: a dense 3x3 convolution, a depthwise one and a 1x1 projection with a
// residual, batch norms and ReLU6: activations outweigh weights, so training lays it out channels-last
// (inductor/channels_last.h).
struct DepthwiseCnn : torch::nn::Module {
  DepthwiseCnn()
      : stem(register_module("stem", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 16, 3).padding(1).bias(false)))),
        bn0(register_module("bn0", torch::nn::BatchNorm2d(16))),
        depthwise(register_module("depthwise", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 16, 3).padding(1).groups(16).bias(false)))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(16))),
        project(register_module("project", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 16, 1).bias(false)))),
        bn2(register_module("bn2", torch::nn::BatchNorm2d(16))),
        fc(register_module("fc", torch::nn::Linear(16, 10))) {}
  at::Tensor forward(const at::Tensor& x) {
    const at::Tensor h = at::hardtanh(bn0->forward(stem->forward(x)), 0, 6);
    const at::Tensor d = at::hardtanh(bn1->forward(depthwise->forward(h)), 0, 6);
    const at::Tensor out = bn2->forward(project->forward(d)) + h;
    return fc->forward(out.mean({2, 3}));
  }
  torch::nn::Conv2d stem;
  torch::nn::BatchNorm2d bn0;
  torch::nn::Conv2d depthwise;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Conv2d project;
  torch::nn::BatchNorm2d bn2;
  torch::nn::Linear fc;
};

struct TinyGpt : torch::nn::Module {
  TinyGpt(double dropout)
      : embed(register_module("embed", torch::nn::Embedding(50, 16))),
        norm1(register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({16})))),
        qkv(register_module("qkv", torch::nn::Linear(16, 48))),
        proj(register_module("proj", torch::nn::Linear(16, 16))),
        norm2(register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({16})))),
        up(register_module("up", torch::nn::Linear(16, 32))),
        down(register_module("down", torch::nn::Linear(32, 16))),
        head(register_module("head", torch::nn::Linear(16, 50))),
        drop(register_module("drop", torch::nn::Dropout(dropout))) {}
  at::Tensor forward(const at::Tensor& tokens) {
    const int64_t b = tokens.size(0), t = tokens.size(1);
    at::Tensor x = embed->forward(tokens);
    auto parts = qkv->forward(norm1->forward(x)).view({b, t, 3, 2, 8}).permute({2, 0, 3, 1, 4}).unbind(0);
    at::Tensor scores = at::matmul(parts[0], parts[1].transpose(-2, -1)) / std::sqrt(8.0);
    const at::Tensor causal = at::ones({t, t}, tokens.options().dtype(at::kBool)).triu(1);
    at::Tensor attention = drop->forward(at::softmax(scores.masked_fill(causal, -INFINITY), -1));
    at::Tensor mixed = at::matmul(attention, parts[2]).transpose(1, 2).reshape({b, t, 16});
    x = x + drop->forward(proj->forward(mixed));
    x = x + down->forward(at::gelu(up->forward(norm2->forward(x))));
    return head->forward(x);
  }
  torch::nn::Embedding embed;
  torch::nn::LayerNorm norm1;
  torch::nn::Linear qkv, proj;
  torch::nn::LayerNorm norm2;
  torch::nn::Linear up, down, head;
  torch::nn::Dropout drop;
};

inline void copy_state(torch::nn::Module& from, torch::nn::Module& to) {
  copy_parameters(from, to);
  at::NoGradGuard no_grad;
  auto source = from.buffers();
  auto target = to.buffers();
  for (size_t i = 0; i < source.size(); ++i) target[i].copy_(source[i]);
}

struct QNet : torch::nn::Module {
  QNet() : hidden(register_module("hidden", torch::nn::Linear(5, 16))), out(register_module("out", torch::nn::Linear(16, 3))) {}
  at::Tensor forward(const at::Tensor& obs) { return out->forward(at::relu(hidden->forward(obs))); }
  torch::nn::Linear hidden, out;
};

// One-step Q-learning's loss: the value of the action taken in each row (picked by integer indexing)
// against the bootstrapped target.
inline at::Tensor q_learning_loss(QNet& net, const at::Tensor& obs, const at::Tensor& actions, const at::Tensor& next_obs) {
  const at::Tensor taken = net.forward(obs).index({at::arange(obs.size(0), actions.options()), actions});
  const at::Tensor target = 0.9 * std::get<0>(net.forward(next_obs).max(1)).detach() + 1.0;
  return at::smooth_l1_loss(taken, target);
}

// Four steps of it compiled against eager's on `device` (float64): one compile, no graph break, the
// losses and gradients of eager.
inline void check_q_learning(c10::Device device) {
  at::manual_seed(4);
  QNet net, eager_net;
  net.to(device, at::kDouble);
  eager_net.to(device, at::kDouble);
  copy_parameters(net, eager_net);
  auto compiled = jitc::compile([&](const at::Tensor& obs, const at::Tensor& actions, const at::Tensor& next_obs) {
    return q_learning_loss(net, obs, actions, next_obs);
  });
  const auto options = at::TensorOptions(device).dtype(at::kDouble);
  for (int step = 0; step < 4; ++step) {
    const auto obs = at::randn({8, 5}, options), next_obs = at::randn({8, 5}, options);
    const auto actions = at::randint(3, {8}, options.dtype(at::kLong));
    net.zero_grad();
    eager_net.zero_grad();
    const at::Tensor got = compiled(obs, actions, next_obs), want = q_learning_loss(eager_net, obs, actions, next_obs);
    got.backward();
    want.backward();
    INFO("step " << step);
    CHECK(got.item<double>() == Approx(want.item<double>()).epsilon(1e-12));
    for (size_t i = 0; i < net.parameters().size(); ++i)
      CHECK(at::allclose(net.parameters()[i].grad(), eager_net.parameters()[i].grad(), 1e-10, 1e-12));
  }
  CHECK(compiled.stats().compiles == 1);
  CHECK(compiled.stats().graph_breaks == 0);
  CHECK(compiled.stats().eager_fallbacks == 0);
}

inline double max_buffer_difference(torch::nn::Module& a, torch::nn::Module& b) { return max_difference(a.buffers(), b.buffers()); }

// Trains two copies of a model for `steps` steps from the same state and data, one through a compiled
// loss: the losses, parameters and buffers agree at every step.
template <class Model, class Data, class Loss>
inline void train_side_by_side(std::shared_ptr<Model> eager_model, std::shared_ptr<Model> model, Data data, Loss loss_of, int steps,
                               double tol) {
  copy_state(*eager_model, *model);
  torch::optim::SGD eager_opt(eager_model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  auto compiled = jitc::compile([&](const at::Tensor& x, const at::Tensor& y) { return loss_of(*model, x, y); });
  for (int step = 0; step < steps; ++step) {
    const auto [x, y] = data();
    at::manual_seed(100 + step);  // the same dropout masks on both sides
    eager_opt.zero_grad();
    at::Tensor want = loss_of(*eager_model, x, y);
    want.backward();
    eager_opt.step();
    at::manual_seed(100 + step);
    opt.zero_grad();
    at::Tensor got = compiled(x, y);
    got.backward();
    opt.step();
    INFO("step " << step);
    CHECK(got.item<double>() == Approx(want.item<double>()).epsilon(tol));
    CHECK(max_parameter_difference(*model, *eager_model) < tol);
    CHECK(max_buffer_difference(*model, *eager_model) < tol);
  }
  CHECK(compiled.stats().compiles == 1);
  // A graph updating captured tensors (batch-norm statistics) is traced again at its first hit instead of a hit.
  CHECK(compiled.stats().hits + compiled.stats().first_hit_checks == steps - 1);
  CHECK(compiled.stats().eager_fallbacks == 0);
}

// One call of a compiled loss and of eager's on the same batch: the losses agree within (loss_rtol,
// loss_atol) and every parameter's gradient within (grad_rtol, grad_atol).
template <class Model, class Compiled, class Loss>
inline void check_step(Compiled& compiled, Model& model, Model& eager_model, Loss loss_of, const at::Tensor& x, const at::Tensor& y,
                       double loss_rtol, double loss_atol, double grad_rtol, double grad_atol) {
  model.zero_grad();
  eager_model.zero_grad();
  const at::Tensor loss = compiled(x, y), eager_loss = loss_of(eager_model, x, y);
  loss.backward();
  eager_loss.backward();
  CHECK(at::allclose(loss, eager_loss, loss_rtol, loss_atol));
  for (size_t i = 0; i < model.parameters().size(); ++i)
    CHECK(at::allclose(model.parameters()[i].grad(), eager_model.parameters()[i].grad(), grad_rtol, grad_atol));
}

// A CNN with batch norms in a reduced-precision dtype (half, bfloat16): its batch norms decompose (the
// forward compiles instead of replaying its ops eagerly), and over three calls the losses, every
// gradient and the running statistics stay within the dtype's rounding of eager's.
inline void check_reduced_precision_batch_norms(c10::Device device, c10::ScalarType dtype) {
  at::manual_seed(12);
  auto model = std::make_shared<SmallCnn>(), eager_model = std::make_shared<SmallCnn>();
  model->to(device, dtype);
  eager_model->to(device, dtype);
  copy_state(*eager_model, *model);
  LogCapture logs("perf_hints");
  auto loss_of = [](SmallCnn& m, const at::Tensor& x, const at::Tensor& y) { return at::cross_entropy_loss(m.forward(x), y); };
  auto compiled = jitc::compile([&](const at::Tensor& x, const at::Tensor& y) { return loss_of(*model, x, y); });
  for (int call = 0; call < 3; ++call) {
    const at::Tensor x = at::randn({4, 3, 8, 8}, at::TensorOptions(device).dtype(dtype));
    const at::Tensor y = at::randint(0, 10, {4}, at::TensorOptions(device).dtype(at::kLong));
    INFO("call " << call);
    check_step(compiled, *model, *eager_model, loss_of, x, y, 1e-2, 1e-2, 2e-2, 2e-2);
    CHECK(max_buffer_difference(*model, *eager_model) < 2e-2);
  }
  // A graph updating captured tensors (batch-norm statistics) is traced again at its first hit instead of a hit.
  CHECK(compiled.stats().hits + compiled.stats().first_hit_checks == 2);
  CHECK(compiled.stats().eager_fallbacks == 0);
  INFO(logs.text());
  CHECK(!logs.contains("runs through the eager backend"));
}

using DrawingStep = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;

// A step that draws random numbers in place: compiled (not replayed through the eager backend), with and
// without grad, it draws what eager draws for the same seed, and its gradients are eager's.
inline void check_draws_as_eager(c10::Device device, const DrawingStep& fn) {
  LogCapture logs;
  const auto options = at::TensorOptions(device).dtype(at::kDouble);
  const at::Tensor w_init = at::randn({6, 5}, options);
  at::Tensor w = w_init.clone().requires_grad_(true);
  auto compiled = jitc::compile([&w, &fn](const at::Tensor& x) { return fn(x, w); });
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call);
    const at::Tensor x = at::randn({4, 6}, options);
    at::Tensor w_eager = w_init.clone().requires_grad_(true);
    at::manual_seed(200 + call);
    const at::Tensor want = fn(x, w_eager);
    want.backward();
    w.mutable_grad() = at::Tensor();
    at::manual_seed(200 + call);
    const at::Tensor got = compiled(x);
    got.backward();
    CHECK(got.item<double>() == Approx(want.item<double>()).epsilon(1e-12));
    CHECK(at::allclose(w.grad(), w_eager.grad(), 1e-12, 1e-12));
    at::NoGradGuard no_grad;
    at::manual_seed(300 + call);
    const at::Tensor want_inference = fn(x, w_init);
    at::manual_seed(300 + call);
    CHECK(compiled(x).item<double>() == Approx(want_inference.item<double>()).epsilon(1e-12));
  }
  CHECK(compiled.stats().hits == 4);
  INFO(logs.text());
  CHECK(logs.lines_with("eager backend").empty());
}

// Batch sizes that change from step to step: as for inference, the second size makes the batch dim
// symbolic; each later size is traced once to check that it follows the symbolic graphs, then runs the
// symbolic forward and backward programs. Losses, gradients and buffers (a batch norm's running
// statistics) equal eager's at every size. `input_of(batch)` makes one batch of `Model`'s input.
template <class Model, class Input>
inline void train_over_changing_batch_sizes(c10::Device device, int64_t classes, Input input_of) {
  at::manual_seed(11);
  auto model = std::make_shared<Model>(), eager_model = std::make_shared<Model>();
  model->to(device, at::kDouble);
  eager_model->to(device, at::kDouble);
  copy_state(*eager_model, *model);
  LogCapture logs("schedule");
  auto loss_of = [](Model& m, const at::Tensor& x, const at::Tensor& y) { return at::cross_entropy_loss(m.forward(x), y); };
  auto compiled = jitc::compile([&](const at::Tensor& x, const at::Tensor& y) { return loss_of(*model, x, y); });
  for (int64_t batch : {4, 6, 8, 10, 12, 7, 4, 6, 8, 10, 12, 7}) {
    INFO("batch " << batch);
    const at::Tensor x = input_of(batch).to(device, at::kDouble);
    const at::Tensor y = at::randint(0, classes, {batch}, at::TensorOptions(device).dtype(at::kLong));
    check_step(compiled, *model, *eager_model, loss_of, x, y, 1e-12, 1e-12, 1e-12, 1e-12);
    CHECK(max_buffer_difference(*model, *eager_model) < 1e-12);
  }
  const auto stats = compiled.stats();
  CHECK(stats.compiles == 2);
  CHECK(stats.size_checks == 4);  // 8, 10, 12 and 7
  CHECK(stats.hits == 6);         // the second pass
  CHECK(stats.eager_fallbacks == 0);
  INFO(logs.text());
  CHECK(!logs.contains("runs through the eager backend"));
  // The symbolic forward's batch norms decompose (fitted from the two traces' decompositions), and on CUDA
  // the symbolic backward's too; the CPU's symbolic backward runs ATen's (training_entry.cpp says why).
  CHECK(!logs.contains("extern aten::native_batch_norm:"));
  if (device.is_cuda()) CHECK(!logs.contains("extern aten::native_batch_norm_backward"));
}

inline void train_over_changing_batch_sizes(c10::Device device) {
  INFO("an MLP");
  train_over_changing_batch_sizes<Mlp>(device, 4, [](int64_t batch) { return at::randn({batch, 8}); });
  INFO("a CNN with batch norms");
  train_over_changing_batch_sizes<SmallCnn>(device, 10, [](int64_t batch) { return at::randn({batch, 3, 8, 8}); });
}

// Inputs the user made channels-last: the convolutions' results, and so the batch norms' inputs, are
// channels-last; the batch norms decompose all the same (their results keep eager's layout) instead of
// leaving the forward on eager replay.
inline void check_channels_last_cnn(c10::Device device) {
  at::manual_seed(6);
  LogCapture logs;
  const auto options = at::TensorOptions(device);
  auto data = [options] {
    return std::pair{at::randn({4, 3, 8, 8}, options.dtype(at::kDouble)).contiguous(at::MemoryFormat::ChannelsLast),
                     at::randint(0, 10, {4}, options.dtype(at::kLong))};
  };
  auto loss_of = [](SmallCnn& m, const at::Tensor& x, const at::Tensor& y) { return at::cross_entropy_loss(m.forward(x), y); };
  auto a = std::make_shared<SmallCnn>(), b = std::make_shared<SmallCnn>();
  a->to(device, at::kDouble);
  b->to(device, at::kDouble);
  train_side_by_side(a, b, data, loss_of, 4, 1e-9);
  CHECK(!logs.contains("runs through the eager backend"));
}

}  // namespace jitc::testing
