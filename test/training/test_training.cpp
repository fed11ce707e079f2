// Compiled training: calls in grad mode return outputs whose backward runs the compiled backward graph.
// Every output and gradient is compared with eager's on the same inputs, over several calls (the first
// call traces and runs eagerly; later calls run the compiled forward and backward).
#include "support/log_capture.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>
#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/optim/sgd.h>
#include <torch/optim/adamw.h>

#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

namespace {

using Tensors = std::vector<at::Tensor>;
using Fn = std::function<at::Tensor(const Tensors&)>;

bool close(const at::Tensor& got, const at::Tensor& want, double tol) {
  if (got.defined() != want.defined()) return false;
  if (!got.defined()) return true;
  return got.sizes() == want.sizes() && got.scalar_type() == want.scalar_type() && at::allclose(got, want, tol, tol, true);
}

std::string describe(const at::Tensor& got, const at::Tensor& want) {
  if (!got.defined() || !want.defined()) return fmt::format("defined: got {}, want {}", got.defined(), want.defined());
  if (got.sizes() != want.sizes()) return "sizes differ";
  return fmt::format("max abs difference {}", (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>());
}

Tensors fresh_leaves(const Tensors& values, const std::vector<bool>& requires_grad) {
  Tensors out;
  for (size_t i = 0; i < values.size(); ++i) out.push_back(values[i].detach().clone().requires_grad_(requires_grad[i]));
  return out;
}

// Output and input gradients of f at `values` (a fixed random tangent), eager or through `compiled`.
std::pair<at::Tensor, Tensors> run(const Fn& f, const Tensors& values, const std::vector<bool>& requires_grad, const at::Tensor& tangent) {
  Tensors leaves = fresh_leaves(values, requires_grad);
  at::Tensor out = f(leaves);
  out.backward(tangent);
  Tensors grads;
  for (const auto& l : leaves) grads.push_back(l.grad());
  return {out.detach(), grads};
}

// Compiled vs eager over `calls` calls: outputs and every input's gradient.
void check_gradients(const Fn& f, const Tensors& values, std::vector<bool> requires_grad = {}, double tol = 1e-10, int calls = 3) {
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
  CHECK(stats.compiles == 1);
  CHECK(stats.hits == calls - 1);
  CHECK(stats.eager_fallbacks == 0);
}

at::Tensor rand64(at::IntArrayRef sizes) { return at::randn(sizes, at::kDouble); }

}  // namespace

TEST_CASE("pointwise chains and broadcasting: gradients equal eager's", "[training]") {
  at::manual_seed(0);
  check_gradients([](const Tensors& x) { return (x[0] * x[1]).tanh() + x[0].sigmoid() * 3; }, {rand64({4, 5}), rand64({4, 5})});
  check_gradients([](const Tensors& x) { return x[0] * x[1] + x[2]; }, {rand64({4, 5}), rand64({5}), rand64({4, 1})});
  check_gradients([](const Tensors& x) { return at::exp(x[0]) / (x[1].abs() + 1); }, {rand64({3, 7}), rand64({3, 7})}, {true, false});
}

TEST_CASE("reductions, matmul, softmax and norms: gradients equal eager's", "[training]") {
  at::manual_seed(1);
  check_gradients([](const Tensors& x) { return x[0].sum(1, true) * x[0].mean() - x[0].amax(0); }, {rand64({6, 5})});
  check_gradients([](const Tensors& x) { return at::matmul(x[0], x[1]).relu() + x[2]; }, {rand64({4, 8}), rand64({8, 3}), rand64({3})});
  check_gradients([](const Tensors& x) { return at::softmax(x[0], -1) * x[1]; }, {rand64({4, 9}), rand64({4, 9})});
  check_gradients([](const Tensors& x) { return at::log_softmax(x[0], 0); }, {rand64({5, 3})});
  check_gradients([](const Tensors& x) { return at::layer_norm(x[0], {6}, x[1], x[2]); }, {rand64({3, 6}), rand64({6}), rand64({6})});
  check_gradients([](const Tensors& x) { return at::gelu(x[0]) + at::silu(x[0]) * at::sqrt(x[0].pow(2) + 1); }, {rand64({4, 4})});
}

TEST_CASE("views and in-place ops on values computed inside: gradients equal eager's", "[training]") {
  at::manual_seed(2);
  check_gradients([](const Tensors& x) { return x[0].t().matmul(x[1]).reshape({-1}).narrow(0, 1, 5); }, {rand64({4, 3}), rand64({4, 2})});
  check_gradients(
      [](const Tensors& x) {
        at::Tensor y = x[0] * 2;
        y.slice(1, 0, 2).mul_(x[1]);
        y.relu_();
        return y.sum(0);
      },
      {rand64({3, 4}), rand64({3, 2})});
  check_gradients(
      [](const Tensors& x) {
        return at::cat({x[0], x[1].unsqueeze(0)}, 0).permute({1, 0}) * 3;
      },
      {rand64({2, 5}), rand64({5})});
}

TEST_CASE("where eager's backward raises (a saved value modified in place), the compiled call's backward raises the same", "[training]") {
  auto fn = [](const at::Tensor& x) {
    at::Tensor y = (x * 2).relu_();
    y.mul_(3);  // relu's saved output is modified
    return y.sum();
  };
  auto compiled = jitc::compile(fn);
  for (int i = 0; i < 3; ++i) {
    const at::Tensor x = at::randn({4}).requires_grad_(true);
    CHECK_THROWS_WITH(compiled(x).backward(), Catch::Contains("modified by an inplace operation"));
  }
}

TEST_CASE("losses: gradients equal eager's", "[training]") {
  at::manual_seed(3);
  const at::Tensor target = at::randint(0, 7, {6}, at::kLong);
  check_gradients([target](const Tensors& x) { return at::cross_entropy_loss(x[0], target); }, {rand64({6, 7})});
  check_gradients([](const Tensors& x) { return at::mse_loss(x[0], x[1]); }, {rand64({4, 3}), rand64({4, 3})});
  check_gradients(
      [](const Tensors& x) { return at::smooth_l1_loss(x[0], x[1]) + at::binary_cross_entropy_with_logits(x[0], x[1].sigmoid()); },
      {rand64({5}), rand64({5})});
}

namespace {

struct Mlp : torch::nn::Module {
  Mlp() : fc1(register_module("fc1", torch::nn::Linear(8, 16))), fc2(register_module("fc2", torch::nn::Linear(16, 4))) {}
  at::Tensor forward(const at::Tensor& x) { return fc2->forward(at::gelu(fc1->forward(x))); }
  torch::nn::Linear fc1, fc2;
};

void copy_parameters(torch::nn::Module& from, torch::nn::Module& to) {
  at::NoGradGuard no_grad;
  auto source = from.parameters();
  auto target = to.parameters();
  for (size_t i = 0; i < source.size(); ++i) target[i].copy_(source[i]);
}

double max_parameter_difference(torch::nn::Module& a, torch::nn::Module& b) {
  double worst = 0;
  auto pa = a.parameters();
  auto pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i) worst = std::max(worst, (pa[i] - pb[i]).abs().max().item<double>());
  return worst;
}

}  // namespace

TEST_CASE("an MLP trained with AdamW: compiled loss and parameters follow eager's at every step", "[training]") {
  at::manual_seed(4);
  auto eager_model = std::make_shared<Mlp>();
  auto model = std::make_shared<Mlp>();
  eager_model->to(at::kDouble);
  model->to(at::kDouble);
  copy_parameters(*eager_model, *model);
  torch::optim::AdamW eager_opt(eager_model->parameters(), torch::optim::AdamWOptions(1e-2));
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-2));
  auto loss_of = [](Mlp& m, const at::Tensor& x, const at::Tensor& y) { return at::cross_entropy_loss(m.forward(x), y); };
  auto compiled = jitc::compile([&](const at::Tensor& x, const at::Tensor& y) { return loss_of(*model, x, y); });
  for (int step = 0; step < 6; ++step) {
    const at::Tensor x = at::randn({32, 8}, at::kDouble);
    const at::Tensor y = at::randint(0, 4, {32}, at::kLong);
    eager_opt.zero_grad();
    at::Tensor want = loss_of(*eager_model, x, y);
    want.backward();
    eager_opt.step();
    opt.zero_grad();
    at::Tensor got = compiled(x, y);
    got.backward();
    opt.step();
    INFO("step " << step);
    CHECK(got.item<double>() == Approx(want.item<double>()).epsilon(1e-12));
    CHECK(max_parameter_difference(*model, *eager_model) < 1e-10);
  }
  CHECK(compiled.stats().compiles == 1);
  CHECK(compiled.stats().hits == 5);
}

TEST_CASE("a compiled module between eager ops, chained with another compiled function, accumulating micro-batches", "[training]") {
  at::manual_seed(5);
  auto model = std::make_shared<Mlp>();
  model->to(at::kDouble);
  auto eager_model = std::make_shared<Mlp>();
  eager_model->to(at::kDouble);
  copy_parameters(*model, *eager_model);
  auto compiled_model = jitc::compile(model);
  auto head = jitc::compile([](const at::Tensor& h) { return (h.tanh() * 2).sum(); });
  const at::Tensor w0 = at::randn({8, 8}, at::kDouble);
  at::Tensor w = w0.clone().requires_grad_(true);
  at::Tensor eager_w = w0.clone().requires_grad_(true);
  for (int micro = 0; micro < 3; ++micro) {  // gradients accumulate in .grad over micro-batches
    const at::Tensor x = at::randn({5, 8}, at::kDouble);
    head(compiled_model(x.matmul(w)).exp()).backward();
    ((eager_model->forward(x.matmul(eager_w)).exp().tanh() * 2).sum()).backward();
  }
  CHECK(at::allclose(w.grad(), eager_w.grad(), 1e-10, 1e-10));
  auto p = model->parameters();
  auto q = eager_model->parameters();
  for (size_t i = 0; i < p.size(); ++i) CHECK(at::allclose(p[i].grad(), q[i].grad(), 1e-10, 1e-10));
  CHECK(compiled_model.stats().hits == 2);
  CHECK(head.stats().hits == 2);
  SECTION("the same compiled module under NoGradGuard keeps a second, inference entry") {
    at::NoGradGuard no_grad;
    const at::Tensor x = at::randn({5, 8}, at::kDouble);
    for (int i = 0; i < 2; ++i) CHECK(at::allclose(compiled_model(x), eager_model->forward(x), 1e-12, 1e-12));
    CHECK(!compiled_model(x).requires_grad());
    CHECK(compiled_model.stats().entries == 2);
  }
}

TEST_CASE("double backward through a compiled function raises a clear error", "[training]") {
  auto f = jitc::compile([](const at::Tensor& x) { return (x * x).sum(); });
  at::Tensor x = at::randn({3}, at::kDouble).requires_grad_(true);
  for (int i = 0; i < 2; ++i) f(x);
  at::Tensor y = f(x);
  CHECK_THROWS_WITH(torch::autograd::grad({y}, {x}, {}, true, true), Catch::Contains("double backward"));
}

namespace {

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
    const at::Tensor causal = at::ones({t, t}, at::TensorOptions(at::kBool)).triu(1);
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

void copy_state(torch::nn::Module& from, torch::nn::Module& to) {
  copy_parameters(from, to);
  at::NoGradGuard no_grad;
  auto source = from.buffers();
  auto target = to.buffers();
  for (size_t i = 0; i < source.size(); ++i) target[i].copy_(source[i]);
}

double max_buffer_difference(torch::nn::Module& a, torch::nn::Module& b) {
  double worst = 0;
  auto pa = a.buffers();
  auto pb = b.buffers();
  for (size_t i = 0; i < pa.size(); ++i)
    worst = std::max(worst, (pa[i].to(at::kDouble) - pb[i].to(at::kDouble)).abs().max().item<double>());
  return worst;
}

// Trains two copies of a model for `steps` steps from the same state and data, one through a compiled
// loss: the losses, parameters and buffers agree at every step.
template <class Model, class Data, class Loss>
void train_side_by_side(std::shared_ptr<Model> eager_model, std::shared_ptr<Model> model, Data data, Loss loss_of, int steps, double tol) {
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
  CHECK(compiled.stats().hits == steps - 1);
  CHECK(compiled.stats().eager_fallbacks == 0);
}

}  // namespace

TEST_CASE("a CNN with batch norm in training mode trains as in eager (SGD with momentum)", "[training]") {
  at::manual_seed(6);
  auto data = [] { return std::pair{at::randn({4, 3, 8, 8}, at::kDouble), at::randint(0, 10, {4}, at::kLong)}; };
  auto loss_of = [](SmallCnn& m, const at::Tensor& x, const at::Tensor& y) { return at::cross_entropy_loss(m.forward(x), y); };
  auto a = std::make_shared<SmallCnn>(), b = std::make_shared<SmallCnn>();
  a->to(at::kDouble);
  b->to(at::kDouble);
  train_side_by_side(a, b, data, loss_of, 4, 1e-9);
}

TEST_CASE("a GPT-style transformer trains as in eager, dropout included", "[training]") {
  at::manual_seed(7);
  auto data = [] { return std::pair{at::randint(0, 50, {2, 6}, at::kLong), at::randint(0, 50, {12}, at::kLong)}; };
  auto loss_of = [](TinyGpt& m, const at::Tensor& x, const at::Tensor& y) {
    return at::cross_entropy_loss(m.forward(x).view({-1, 50}), y);
  };
  for (double p : {0.0, 0.2}) {
    auto a = std::make_shared<TinyGpt>(p), b = std::make_shared<TinyGpt>(p);
    a->to(at::kDouble);
    b->to(at::kDouble);
    train_side_by_side(a, b, data, loss_of, 4, 1e-9);
  }
}

TEST_CASE("batch norm in training mode updates its running statistics once per call, as in eager", "[training]") {
  torch::nn::BatchNorm2d eager_bn(4), bn(4);
  auto f = jitc::compile([&](const at::Tensor& x) { return bn->forward(x).sum(); });
  for (int i = 0; i < 3; ++i) {
    const at::Tensor x = at::randn({2, 4, 3, 3});
    eager_bn->forward(x).sum().backward();
    f(x).backward();
    INFO("call " << i);
    CHECK(at::allclose(bn->running_mean, eager_bn->running_mean, 1e-6, 1e-7));
    CHECK(at::allclose(bn->running_var, eager_bn->running_var, 1e-6, 1e-7));
    CHECK(bn->num_batches_tracked.item<int64_t>() == eager_bn->num_batches_tracked.item<int64_t>());
    CHECK(at::allclose(bn->weight.grad(), eager_bn->weight.grad(), 1e-5, 1e-6));
  }
}

TEST_CASE("backward formulas of activations, softmax and losses become kernels, not extern calls", "[training]") {
  at::manual_seed(8);
  const at::Tensor target = at::randint(0, 6, {5}, at::kLong);
  jitc::testing::LogCapture logs("perf_hints");
  auto f = [target](const Tensors& x) {
    at::Tensor h = at::gelu(x[0]) + at::gelu(x[0], "tanh") + at::silu(x[0]) + at::tanh(x[0]) + at::sigmoid(x[0]);
    h = at::relu(h) + at::hardtanh(h, -1, 2) + at::leaky_relu(h, 0.1);
    return at::cross_entropy_loss(at::softmax(h, 1) * 3, target);
  };
  check_gradients(f, {rand64({5, 6})});
  INFO(logs.text());
  CHECK(logs.lines_with("_backward: extern").empty());
  CHECK(!logs.contains("runs through the eager backend"));
}
