// Compiled training: calls in grad mode return outputs whose backward runs the compiled backward graph.
// Every output and gradient is compared with eager's on the same inputs, over several calls (the first
// call traces and runs eagerly; later calls run the compiled forward and backward).
#include "counting_allocator.h"
#include "runtime/eager_replay.h"
#include "support/log_capture.h"
#include "support/scoped_env.h"
#include "training/call_semantics_checks.h"
#include "training/training_support.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <catch2/catch.hpp>
#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/instancenorm.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/rnn.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

using namespace jitc::testing;

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

TEST_CASE("bfloat16 and half softmax and log_softmax gradients compute in float32 and round once as eager's", "[training]") {
  at::manual_seed(12);
  jitc::testing::LogCapture logs("schedule");
  for (const auto dtype : {at::kBFloat16, at::kHalf}) {
    INFO(dtype);
    auto low = [dtype](at::IntArrayRef sizes) { return at::randn(sizes, dtype); };
    check_gradients([](const Tensors& x) { return at::softmax(x[0] * x[1], -1) * x[2]; }, {low({8, 40}), low({40}), low({8, 40})}, {},
                    3e-2);
    check_gradients([](const Tensors& x) { return at::log_softmax(x[0], 0) * x[1]; }, {low({12, 5}), low({12, 5})}, {}, 3e-2);
  }
  CHECK(logs.contains("Schedule of"));
  CHECK(!logs.contains("softmax_backward_data"));  // fused kernels, not ATen's backward kernels
}

TEST_CASE("bfloat16 and half layer_norm gradients compute in float32 and round once as eager's", "[training]") {
  at::manual_seed(13);
  jitc::testing::LogCapture logs("schedule");
  for (const auto dtype : {at::kBFloat16, at::kHalf}) {
    INFO(dtype);
    auto low = [dtype](at::IntArrayRef sizes) { return at::randn(sizes, dtype); };
    check_gradients([](const Tensors& x) { return at::layer_norm(x[0], {48}, x[1], x[2]) * x[3]; },
                    {low({6, 48}), low({48}), low({48}), low({6, 48})}, {}, 3e-2);
    check_gradients([](const Tensors& x) { return at::layer_norm(x[0] * 2, {4, 6}) * x[1]; }, {low({3, 4, 6}), low({3, 4, 6})}, {}, 3e-2);
  }
  CHECK(logs.contains("Schedule of"));
  CHECK(!logs.contains("native_layer_norm_backward"));  // fused kernels, not ATen's backward kernel
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

TEST_CASE("a CNN with batch norm in training mode trains as in eager (SGD with momentum)", "[training]") {
  at::manual_seed(6);
  auto data = [] { return std::pair{at::randn({4, 3, 8, 8}, at::kDouble), at::randint(0, 10, {4}, at::kLong)}; };
  auto loss_of = [](SmallCnn& m, const at::Tensor& x, const at::Tensor& y) { return at::cross_entropy_loss(m.forward(x), y); };
  auto a = std::make_shared<SmallCnn>(), b = std::make_shared<SmallCnn>();
  a->to(at::kDouble);
  b->to(at::kDouble);
  train_side_by_side(a, b, data, loss_of, 4, 1e-9);
}

TEST_CASE("a CNN fed channels-last inputs trains with its batch norms compiled, as in eager", "[training]") {
  check_channels_last_cnn(at::kCPU);
}

// float32 on the CPU, activations outweighing weights: the saved values and gradients are channels-last
// (the forward's convolutions run so), and the steps follow eager's within float32's rounding (oneDNN's
// channels-last convolutions sum in another order). Changing batch sizes: two compiles, then the symbolic
// forward and backward, channels-last too (the layout's strides do not involve the batch).
TEST_CASE("a depthwise CNN in float32 trains channels-last as in eager", "[training]") {
  if (!at::hasMKLDNN()) {
    WARN("no oneDNN: skipped");
    return;
  }
  at::manual_seed(12);
  jitc::testing::LogCapture logs("aot_graphs");
  auto data = [] { return std::pair{at::randn({4, 3, 16, 16}), at::randint(0, 10, {4}, at::kLong)}; };
  auto loss_of = [](DepthwiseCnn& m, const at::Tensor& x, const at::Tensor& y) { return at::cross_entropy_loss(m.forward(x), y); };
  train_side_by_side(std::make_shared<DepthwiseCnn>(), std::make_shared<DepthwiseCnn>(), data, loss_of, 4, 1e-4);
  CHECK(logs.contains("saved values ("));
  CHECK(!logs.contains("(0 channels-last)"));

  auto model = std::make_shared<DepthwiseCnn>(), eager_model = std::make_shared<DepthwiseCnn>();
  copy_state(*eager_model, *model);
  auto compiled = jitc::compile([&](const at::Tensor& x, const at::Tensor& y) { return loss_of(*model, x, y); });
  for (int64_t batch : {4, 6, 8, 10, 6, 8}) {
    INFO("batch " << batch);
    const at::Tensor x = at::randn({batch, 3, 16, 16}), y = at::randint(0, 10, {batch}, at::kLong);
    check_step(compiled, *model, *eager_model, loss_of, x, y, 1e-4, 1e-5, 1e-3, 1e-5);
  }
  CHECK(compiled.stats().compiles == 2);
  CHECK(compiled.stats().eager_fallbacks == 0);
}

// Trains two copies of Model side by side (train_side_by_side, five steps), with builds on the first hit and
// in the background (the backward then first runs as an eager replay of its graph), checking that the
// training graphs saved channels-last values: the layouts these models are about (oneDNN's; skipped without it).
template <class Model, class Data, class Loss>
void train_channels_last_both_ways(Data data, Loss loss_of, uint64_t seed) {
  if (!at::hasMKLDNN()) {
    WARN("no oneDNN: skipped");
    return;
  }
  for (const char* background : {"0", "1"}) {
    INFO("JITC_COMPILE_IN_BACKGROUND=" << background);
    jitc::testing::ScopedEnv env("JITC_COMPILE_IN_BACKGROUND", background);
    jitc::testing::LogCapture logs("aot_graphs");
    at::manual_seed(seed);
    train_side_by_side(std::make_shared<Model>(), std::make_shared<Model>(), data, loss_of, 5, 1e-4);
    CHECK(logs.contains("saved values ("));
    CHECK(!logs.contains("(0 channels-last)"));
  }
}

// A strided convolution, a group norm, SiLU and a transposed convolution (a diffusion or GAN block): the
// group norm's backward runs through ATen, which reads its gradient in the saved activation's layout. The
// activation is saved channels-last and the gradient (the loss's) computed contiguous; the extern call
// gets both in one layout (eager_replay.cpp). Before, every compiled step's gradients were wrong (group
// norm weight off by 0.3), in the compiled backward and in its eager replay while the program builds.
struct GroupNormCnn : torch::nn::Module {
  GroupNormCnn()
      : down(register_module("down", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).stride(2).padding(1)))),
        norm(register_module("norm", torch::nn::GroupNorm(4, 8))),
        up(register_module("up", torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(8, 3, 4).stride(2).padding(1)))) {}
  at::Tensor forward(const at::Tensor& x) { return up->forward(at::silu(norm->forward(down->forward(x)))); }
  torch::nn::Conv2d down;
  torch::nn::GroupNorm norm;
  torch::nn::ConvTranspose2d up;
};

TEST_CASE("a group norm reading a channels-last saved activation trains as in eager", "[training]") {
  auto data = [] { return std::pair{at::randn({4, 3, 16, 16}), at::randn({4, 3, 16, 16})}; };
  auto loss_of = [](GroupNormCnn& m, const at::Tensor& x, const at::Tensor& y) { return at::mse_loss(m.forward(x), y); };
  train_channels_last_both_ways<GroupNormCnn>(data, loss_of, 3);
}

// A small UNet for segmentation (a skip joined by cat, batch and instance norms, 2-D dropout, nearest
// upsampling, a per-pixel cross-entropy): channels-last in training, where ATen's nll_loss2d_backward
// raised "grad_input must be contiguous" on the channels-last log-probabilities, and where the backward
// graph's eager replay (its program still building) failed in a view of a result ATen had computed
// channels-last, although the graph traced it contiguous.
struct SegmentationNet : torch::nn::Module {
  SegmentationNet()
      : enc1(register_module("enc1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(8))),
        enc2(register_module("enc2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 3).padding(1)))),
        bn2(register_module("bn2", torch::nn::BatchNorm2d(16))),
        dec(register_module("dec", torch::nn::Conv2d(torch::nn::Conv2dOptions(24, 8, 3).padding(1)))),
        norm(register_module("norm", torch::nn::InstanceNorm2d(torch::nn::InstanceNorm2dOptions(8).affine(true)))),
        head(register_module("head", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 2, 1)))),
        drop(register_module("drop", torch::nn::Dropout2d(0.2))) {}
  at::Tensor forward(const at::Tensor& x) {
    const at::Tensor skip = at::relu(bn1->forward(enc1->forward(x)));
    const at::Tensor deep = drop->forward(at::relu(bn2->forward(enc2->forward(at::max_pool2d(skip, {2, 2})))));
    const at::Tensor up = at::upsample_nearest2d(deep, std::nullopt, std::vector<double>{2.0, 2.0});
    return head->forward(at::leaky_relu(norm->forward(dec->forward(at::cat({up, skip}, 1)))));
  }
  torch::nn::Conv2d enc1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Conv2d enc2;
  torch::nn::BatchNorm2d bn2;
  torch::nn::Conv2d dec;
  torch::nn::InstanceNorm2d norm;
  torch::nn::Conv2d head;
  torch::nn::Dropout2d drop;
};

TEST_CASE("a segmentation net with a per-pixel cross-entropy trains channels-last as in eager", "[training]") {
  auto data = [] { return std::pair{at::randn({2, 3, 16, 16}), at::randint(0, 2, {2, 16, 16}, at::kLong)}; };
  auto loss_of = [](SegmentationNet& m, const at::Tensor& x, const at::Tensor& y) { return at::cross_entropy_loss(m.forward(x), y); };
  train_channels_last_both_ways<SegmentationNet>(data, loss_of, 4);
}

// A saved value or an extern's result in another layout than its meta's is copied to it; one whose strides
// differ only in dims of size 1 (a depthwise weight's gradient, [16, 1, 3, 3], from oneDNN's channels-last
// backward) becomes a view with the meta's strides: a compiled function it reaches (an optimizer step)
// then sees the strides its guards were traced with, and does not recompile.
TEST_CASE("results in another layout than their metadata's are copied or re-viewed to it", "[training]") {
  jitc::graph::TensorMeta meta;
  meta.dtype = at::kFloat;
  meta.sizes = jitc::graph::constant_shape(std::vector<int64_t>{16, 1, 3, 3}.data(), 4);
  meta.strides = jitc::graph::constant_shape(std::vector<int64_t>{9, 9, 3, 1}.data(), 4);
  const at::Tensor depthwise = at::randn({16, 3, 3}).unsqueeze(1).as_strided({16, 1, 3, 3}, {9, 1, 3, 1});
  const at::Tensor viewed = jitc::runtime::in_layout(depthwise, meta, nullptr);
  CHECK(viewed.strides() == at::IntArrayRef({9, 9, 3, 1}));
  CHECK(viewed.data_ptr() == depthwise.data_ptr());
  const at::Tensor same = at::randn({16, 1, 3, 3});
  CHECK(jitc::runtime::in_layout(same, meta, nullptr).is_same(same));
  meta.sizes = jitc::graph::constant_shape(std::vector<int64_t>{2, 4, 3, 3}.data(), 4);
  meta.strides = jitc::graph::constant_shape(std::vector<int64_t>{36, 1, 12, 4}.data(), 4);
  const at::Tensor contiguous = at::randn({2, 4, 3, 3});
  const at::Tensor copied = jitc::runtime::in_layout(contiguous, meta, nullptr);
  CHECK(copied.strides() == at::IntArrayRef({36, 1, 12, 4}));
  CHECK(copied.data_ptr() != contiguous.data_ptr());
  CHECK(at::equal(copied, contiguous));
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
  // Weighted by r: the plain sum of a normalized tensor has a weight gradient of exactly 0, where both
  // sides return rounding noise.
  const at::Tensor r = at::randn({2, 4, 3, 3});
  auto f = jitc::compile([&](const at::Tensor& x) { return (bn->forward(x) * r).sum(); });
  for (int i = 0; i < 3; ++i) {
    const at::Tensor x = at::randn({2, 4, 3, 3});
    (eager_bn->forward(x) * r).sum().backward();
    f(x).backward();
    INFO("call " << i);
    CHECK(at::allclose(bn->running_mean, eager_bn->running_mean, 1e-6, 1e-7));
    CHECK(at::allclose(bn->running_var, eager_bn->running_var, 1e-6, 1e-7));
    CHECK(bn->num_batches_tracked.item<int64_t>() == eager_bn->num_batches_tracked.item<int64_t>());
    CHECK(at::allclose(bn->weight.grad(), eager_bn->weight.grad(), 1e-5, 1e-6));
    CHECK(at::allclose(bn->bias.grad(), eager_bn->bias.grad(), 1e-5, 1e-6));
  }
}

TEST_CASE("batch norms in bfloat16 and half training compile, within the dtype's rounding of eager", "[training]") {
  for (auto dtype : {at::kBFloat16, at::kHalf}) {
    INFO(c10::toString(dtype));
    check_reduced_precision_batch_norms(at::kCPU, dtype);
  }
}

namespace {

// A GRU over an LSTM: ATen's cells activate their gates in place on chunks of one buffer.
struct Recurrent : torch::nn::Module {
  Recurrent()
      : gru(register_module("gru", torch::nn::GRU(torch::nn::GRUOptions(6, 8).batch_first(true)))),
        lstm(register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(8, 5).batch_first(true)))) {}
  at::Tensor forward(const at::Tensor& x) { return std::get<0>(lstm->forward(std::get<0>(gru->forward(x)))).sum(1); }
  torch::nn::GRU gru;
  torch::nn::LSTM lstm;
};

}  // namespace

TEST_CASE("a GRU and an LSTM train as in eager, their cells' in-place gates compiled", "[training]") {
  at::manual_seed(13);
  LogCapture logs("perf_hints");
  auto data = [] { return std::pair{at::randn({3, 4, 6}, at::kDouble), at::randn({3, 5}, at::kDouble)}; };
  auto loss_of = [](Recurrent& m, const at::Tensor& x, const at::Tensor& y) { return at::mse_loss(m.forward(x), y); };
  auto a = std::make_shared<Recurrent>(), b = std::make_shared<Recurrent>();
  a->to(at::kDouble);
  b->to(at::kDouble);
  train_side_by_side(a, b, data, loss_of, 3, 1e-9);
  INFO(logs.text());
  CHECK(!logs.contains("runs through the eager backend"));
}

TEST_CASE("a value written in place after it is computed is saved for the backward, not recomputed", "[training]") {
  // The targets' clone, its first entry then set to ignore_index: nll_loss's backward reads the clone as
  // written. Recomputed from the targets, it gave the first sample a gradient eager does not.
  at::manual_seed(14);
  const at::Tensor target = at::randint(0, 5, {6}, at::kLong);
  check_gradients(
      [](const Tensors& x) {
        at::Tensor t = x[1].clone();
        t.select(0, 0).fill_(-100);
        return at::nll_loss(at::log_softmax(x[0], 1), t, {}, at::Reduction::Sum, -100);
      },
      {rand64({6, 5}), target}, {true, false});
  check_gradients(
      [](const Tensors& x) {
        at::Tensor scale = x[1] * 1;
        scale.narrow(0, 1, 2).zero_();
        return (x[0] * scale).sum(1);
      },
      {rand64({4, 3}), rand64({3})}, {true, false});
}

TEST_CASE("backward formulas of activations, norms, softmax and losses become kernels, not extern calls", "[training]") {
  at::manual_seed(8);
  const at::Tensor target = at::randint(0, 6, {5}, at::kLong);
  jitc::testing::LogCapture logs("perf_hints");
  auto f = [target](const Tensors& x) {
    at::Tensor h = at::gelu(x[0]) + at::gelu(x[0], "tanh") + at::silu(x[0]) + at::tanh(x[0]) + at::sigmoid(x[0]);
    h = at::relu(h) + at::hardtanh(h, -1, 2) + at::leaky_relu(h, 0.1);
    h = at::layer_norm(h, {6}, x[1], x[2]) + at::layer_norm(h, {6});
    return at::cross_entropy_loss(at::softmax(h, 1) * 3, target);
  };
  check_gradients(f, {rand64({5, 6}), rand64({6}), rand64({6})});
  INFO(logs.text());
  CHECK(logs.lines_with("_backward: extern").empty());
  CHECK(!logs.contains("runs through the eager backend"));
}

TEST_CASE("hooks on parameters run as in eager, and JITC_LOGS=aot_graphs prints both graphs and what is saved", "[training]") {
  jitc::testing::LogCapture logs("aot_graphs");
  at::Tensor w = at::randn({4}, at::kDouble).requires_grad_(true);
  w.register_hook([](const at::Tensor& g) { return g * 10; });
  auto f = jitc::compile([&w](const at::Tensor& x) { return (x * w).tanh().sum(); });
  const at::Tensor x = at::randn({4}, at::kDouble);
  for (int i = 0; i < 2; ++i) {
    w.mutable_grad() = at::Tensor();
    f(x).backward();
    const at::Tensor want = 10 * x * (1 - (x * w.detach()).tanh().pow(2));
    CHECK(at::allclose(w.grad(), want, 1e-12, 1e-12));
  }
  CHECK(f.stats().hits == 1);
  CHECK(logs.contains("TRAINING GRAPHS of compiled_fn_"));
  CHECK(logs.contains("===== forward graph ====="));
  CHECK(logs.contains("===== backward graph ====="));
  CHECK(logs.contains("aten::tanh_backward"));
  CHECK(logs.contains("saved[0]: "));
}

TEST_CASE(
    "saved values: retain_graph allows a second backward, without it the second raises as eager's, and an in-place change "
    "of a saved tensor raises",
    "[training]") {
  at::Tensor w = at::randn({5}, at::kDouble).requires_grad_(true);
  auto f = jitc::compile([&w](const at::Tensor& x) { return (x * w).sin().sum(); });
  at::Tensor x = at::randn({5}, at::kDouble);
  f(x);  // the trace; later calls are compiled
  at::Tensor y = f(x);
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  CHECK(at::allclose(w.grad(), 2 * x * (x * w.detach()).cos(), 1e-12, 1e-12));
  CHECK_THROWS_WITH(y.backward(), Catch::Contains("Trying to backward through the graph a second time"));
  at::Tensor z = f(x);
  x.add_(1);  // x is saved (the gradient of x * w with respect to w reads it): eager's backward raises too
  CHECK_THROWS_WITH(z.backward(), Catch::Contains("modified by an inplace operation"));
  CHECK(f.stats().hits == 2);
}

namespace {

// AdamW's update written with ATen ops over a parameter list, as a user writes it to compile it: the
// values that change every step (the bias corrections) come in as 0-dim tensors, which are data to a
// compiled function (a double argument is a guarded value: each new one would re-trace).
void adamw_update(const Tensors& params, const Tensors& grads, const Tensors& exp_avg, const Tensors& exp_avg_sq, double lr,
                  const at::Tensor& neg_step_size, const at::Tensor& bias2_sqrt) {
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].mul_(1 - lr * 0.01);
    exp_avg[i].lerp_(grads[i], 1 - 0.9);
    exp_avg_sq[i].mul_(0.999).addcmul_(grads[i], grads[i], 1 - 0.999);
    const at::Tensor denom = (exp_avg_sq[i].sqrt() / bias2_sqrt).add_(1e-8);
    params[i].add_(exp_avg[i] / denom * neg_step_size);
  }
}

Tensors clones(const Tensors& ts) {
  Tensors out;
  for (const auto& t : ts) out.push_back(t.clone());
  return out;
}

}  // namespace

TEST_CASE("a user's AdamW update over a parameter list, compiled: parameters and state land in the user's tensors as eager's",
          "[training]") {
  at::manual_seed(9);
  const Tensors shapes{rand64({4, 3}), rand64({7}), rand64({2, 5, 2}), rand64({1})};
  Tensors params = clones(shapes), state_m, state_v;
  for (const auto& p : shapes) state_m.push_back(at::zeros_like(p)), state_v.push_back(at::zeros_like(p));
  Tensors eager_params = clones(params), eager_m = clones(state_m), eager_v = clones(state_v);
  auto compiled =
      jitc::compile([](const Tensors& p, const Tensors& g, const Tensors& m, const Tensors& v, double lr, const at::Tensor& neg_step_size,
                       const at::Tensor& bias2_sqrt) { adamw_update(p, g, m, v, lr, neg_step_size, bias2_sqrt); });
  const double lr = 1e-2;
  for (int64_t step = 1; step <= 6; ++step) {
    Tensors grads;
    for (const auto& p : shapes) grads.push_back(at::randn_like(p));
    const at::Tensor neg_step_size = at::scalar_tensor(-lr / (1 - std::pow(0.9, step)), at::kDouble);
    const at::Tensor bias2_sqrt = at::scalar_tensor(std::sqrt(1 - std::pow(0.999, step)), at::kDouble);
    adamw_update(eager_params, grads, eager_m, eager_v, lr, neg_step_size, bias2_sqrt);
    compiled(params, grads, state_m, state_v, lr, neg_step_size, bias2_sqrt);
    INFO("step " << step);
    for (size_t i = 0; i < params.size(); ++i) {
      CHECK(at::allclose(params[i], eager_params[i], 1e-12, 1e-12));
      CHECK(at::allclose(state_m[i], eager_m[i], 1e-12, 1e-12));
      CHECK(at::allclose(state_v[i], eager_v[i], 1e-12, 1e-12));
    }
  }
  CHECK(compiled.stats().compiles == 1);
  CHECK(compiled.stats().hits == 5);
}

TEST_CASE("values the backward recomputes are not recomputed from an input the forward then writes in place", "[training]") {
  jitc::testing::LogCapture logs("aot_graphs");
  const at::Tensor w0 = at::randn({6}, at::kDouble);
  at::Tensor w = w0.clone().requires_grad_(true), eager_w = w0.clone().requires_grad_(true);
  auto step = [](const at::Tensor& x, const at::Tensor& weight) {
    at::Tensor y = (weight * x).sin();  // sin's backward reads weight * x, which could be recomputed from weight and x
    {
      at::NoGradGuard no_grad;
      weight.add_(1);  // ... but weight changes afterwards
    }
    return (y * x).sum();
  };
  auto compiled = jitc::compile([&](const at::Tensor& x) { return step(x, w); });
  for (int i = 0; i < 3; ++i) {
    const at::Tensor x = at::randn({6}, at::kDouble);
    compiled(x).backward();
    step(x, eager_w).backward();
    INFO("call " << i);
    CHECK(at::allclose(w.grad(), eager_w.grad(), 1e-12, 1e-12));
    CHECK(at::allclose(w.detach(), eager_w.detach(), 0, 0));
  }
  CHECK(compiled.stats().hits + compiled.stats().first_hit_checks == 2);  // it writes w: its first hit is traced again
  CHECK(logs.contains("0 recomputed by the backward"));
}

TEST_CASE("a saved input that the forward writes in place afterwards makes the backward raise, as eager's does", "[training]") {
  at::Tensor w = at::randn({4}, at::kDouble).requires_grad_(true);
  auto step = [&w](const at::Tensor& x) {
    at::Tensor y = (x * w).sum();  // the gradient of x reads w
    at::NoGradGuard no_grad;
    w.add_(1);
    return y;
  };
  auto compiled = jitc::compile(step);
  for (int i = 0; i < 3; ++i) {
    const at::Tensor x = at::randn({4}, at::kDouble).requires_grad_(true);
    CHECK_THROWS_WITH(step(x).backward(), Catch::Contains("modified by an inplace operation"));
    CHECK_THROWS_WITH(compiled(x).backward(), Catch::Contains("modified by an inplace operation"));
  }
  // The training trace's own backward meets autograd's version check: such calls run eagerly.
  CHECK(compiled.stats().eager_fallbacks == 3);
}

TEST_CASE("a transformer trains under CPU autocast (bfloat16) as in eager", "[training]") {
  at::manual_seed(9);
  auto data = [] { return std::pair{at::randint(0, 50, {2, 6}, at::kLong), at::randint(0, 50, {12}, at::kLong)}; };
  auto loss_of = [](TinyGpt& m, const at::Tensor& x, const at::Tensor& y) {
    return at::cross_entropy_loss(m.forward(x).view({-1, 50}).to(at::kFloat), y);
  };
  at::autocast::set_autocast_enabled(at::kCPU, true);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  train_side_by_side(std::make_shared<TinyGpt>(0.0), std::make_shared<TinyGpt>(0.0), data, loss_of, 4, 1e-5);
  at::autocast::set_autocast_enabled(at::kCPU, false);
  at::autocast::clear_cache();
}

// Batch sizes that change from step to step (the last batch of an epoch, variable-length sequences):
// see training_support.h.
TEST_CASE("training over changing batch sizes: two compiles, then every size runs the symbolic forward and backward", "[training]") {
  train_over_changing_batch_sizes(at::kCPU);
}

// A graph break inside a training step (a NaN check, a branch on data) is checked on replay as in
// inference: each value gets its own compiled forward and backward, and a call whose value differs
// moves on to the entry that holds it (or re-traces) before any backward exists. Dropout draws before
// the break: a call that fails one entry's check and runs another still draws eager's masks.
TEST_CASE("graph breaks in a training step: each value its own compiled forward and backward, gradients eager's", "[training]") {
  at::manual_seed(6);
  const at::Tensor w_init = at::randn({4, 4}, at::kDouble);
  auto step = [](const at::Tensor& x, const at::Tensor& w) {
    const at::Tensor h = at::dropout(at::matmul(x, w), 0.25, /*train=*/true).tanh();
    TORCH_CHECK(!h.isnan().any().item<bool>(), "NaN in the hidden layer");
    const bool positive = (x.sum() > 0).item<bool>();
    return positive ? (h * h).sum() : h.exp().sum();
  };
  at::Tensor w = w_init.clone().requires_grad_(true);
  auto compiled = jitc::compile([&w, &step](const at::Tensor& x) { return step(x, w); });
  for (int call = 0; call < 8; ++call) {
    INFO("call " << call);
    const double sign = call % 2 == 0 ? 1.0 : -1.0;
    const at::Tensor x = (at::rand({3, 4}, at::kDouble) + 0.1) * sign;
    at::Tensor w_eager = w_init.clone().requires_grad_(true);
    at::manual_seed(100 + call);
    at::Tensor want = step(x, w_eager);
    want.backward();
    w.mutable_grad() = at::Tensor();
    at::manual_seed(100 + call);
    at::Tensor got = compiled(x);
    got.backward();
    CHECK(got.item<double>() == Approx(want.item<double>()).epsilon(1e-12));
    CHECK(at::allclose(w.grad(), w_eager.grad(), 1e-12, 1e-12));
  }
  const auto s = compiled.stats();
  CHECK(s.compiles == 2);  // one entry per sign
  CHECK(s.hits == 6);
  CHECK(s.graph_breaks >= 4);  // two per trace
  const at::Tensor nan = at::full({3, 4}, std::nan(""), at::kDouble);
  CHECK_THROWS_WITH(compiled(nan), Catch::Contains("NaN in the hidden layer"));  // re-traced: the callable's own error
  const auto after_error = compiled.stats();
  const at::Tensor again = at::rand({3, 4}, at::kDouble) + 0.1;
  compiled(again).backward();  // the user's error blocked nothing: still compiled
  CHECK(compiled.stats().hits == after_error.hits + 1);
  CHECK(compiled.stats().eager_fallbacks == after_error.eager_fallbacks);
  at::NoGradGuard no_grad;  // an inference entry beside the training ones
  const at::Tensor x = at::rand({3, 4}, at::kDouble) + 0.1;
  at::manual_seed(7);
  const at::Tensor want = step(x, w_init);
  at::manual_seed(7);
  CHECK(at::allclose(compiled(x), want, 1e-12, 1e-12));
}

// CPU dropout draws its mask in place (bernoulli_ with a float p); the graph takes its out-of-place form
// and compiles, where it ran through eager replay before. The masks are eager's for the same seed.
TEST_CASE("dropout in training mode compiles on the CPU and draws eager's masks, with and without grad", "[training]") {
  check_draws_as_eager(at::kCPU, [](const at::Tensor& x, const at::Tensor& w) {
    return at::dropout(at::matmul(x, w), 0.3, /*train=*/true).sigmoid().sum();
  });
}

// RReLU in training mode draws its slopes into a noise tensor it is given (rrelu_with_noise writes an
// argument that is not self); the graph takes its functional twin, which returns the noise, and compiles.
TEST_CASE("RReLU in training mode compiles and draws eager's slopes, with and without grad", "[training]") {
  check_draws_as_eager(at::kCPU, [](const at::Tensor& x, const at::Tensor& w) {
    return at::rrelu(at::matmul(x, w), 0.1, 0.4, /*training=*/true).sin().sum();
  });
}

namespace {

// The number in the first "TRAINING GRAPHS of ...: N saved values" line a capture holds; -1 without one.
int saved_count(const LogCapture& logs) {
  const auto lines = logs.lines_with("saved values");
  if (lines.empty()) return -1;
  const std::string& line = lines.front();
  const size_t end = line.find(" saved values"), start = line.rfind(' ', end - 1) + 1;
  return std::stoi(line.substr(start, end - start));
}

}  // namespace

TEST_CASE("ReLU6 and leaky_relu gradients read the activation's output: the input is not saved, gradients are eager's", "[training]") {
  const at::Tensor w1_0 = at::randn({5, 7}, at::kDouble), w2_0 = at::randn({7, 3}, at::kDouble);
  // Pre-activations on the bounds (row 2 at 0, about 6 in row 0: no gradient), inside and outside. Not NaN:
  // ATen's vectorized hardtanh_backward passes no gradient there and its scalar loop (the tail) all of it.
  at::Tensor x = at::zeros({4, 5}, at::kDouble);
  x.index_put_({0, 0}, 6.0 / w1_0[0][0].item<double>());
  x[1] = at::randn({5}, at::kDouble) * 4;
  x[3] = at::randn({5}, at::kDouble) * 20;
  // The activation's output goes to the caller, or the forward writes into it afterwards: then the ReLU6's
  // input is saved (a write into the output must not change what the backward reads).
  enum class Use { kInsideOnly, kReturned, kWrittenInPlace };
  for (const Use use : {Use::kInsideOnly, Use::kReturned, Use::kWrittenInPlace}) {
    INFO("use " << static_cast<int>(use));
    LogCapture logs("aot_graphs");
    at::Tensor w1 = w1_0.clone().requires_grad_(), w2 = w2_0.clone().requires_grad_();
    at::Tensor e1 = w1_0.clone().requires_grad_(), e2 = w2_0.clone().requires_grad_();
    auto step = [use](const at::Tensor& x, const at::Tensor& a, const at::Tensor& b) {
      at::Tensor y = at::hardtanh(x.mm(a), 0, 6);
      // sin's gradient reads y, and the ReLU6's gradient reads sin's: y is saved as the forward computed it.
      // Written in place, y must be read by no gradient but the ReLU6's (eager raises otherwise).
      const at::Tensor loss = at::leaky_relu((use == Use::kWrittenInPlace ? y * 3 : y.sin()).mm(b), 0.1).sum();
      if (use == Use::kWrittenInPlace) y.mul_(2);
      return use == Use::kReturned ? std::vector<at::Tensor>{loss, y} : std::vector<at::Tensor>{loss};
    };
    auto compiled = jitc::compile([&](const at::Tensor& x) { return step(x, w1, w2); });
    for (int call = 0; call < 3; ++call) {
      INFO("call " << call);
      w1.mutable_grad() = at::Tensor();
      w2.mutable_grad() = at::Tensor();
      e1.mutable_grad() = at::Tensor();
      e2.mutable_grad() = at::Tensor();
      const auto got = compiled(x), want = step(x, e1, e2);
      got[0].backward();
      want[0].backward();
      if (use == Use::kReturned) CHECK(at::allclose(got[1], want[1], 1e-12, 1e-12));
      CHECK(at::allclose(w1.grad(), e1.grad(), 1e-12, 1e-12));
      CHECK(at::allclose(w2.grad(), e2.grad(), 1e-12, 1e-12));
    }
    CHECK(compiled.stats().hits == 2);
    // Saved: x, y, w2 and leaky_relu's output (its input swapped for it); the ReLU6's input too where the
    // output is returned.
    if (use != Use::kWrittenInPlace) CHECK(saved_count(logs) == (use == Use::kReturned ? 5 : 4));
  }
}

// Residual blocks' backward: the gradient through a block's last relu is read by its batch norm's backward
// and, after the branch's two convolutions' backward, by the sum for the skip. Computed again in both
// kernels, it kept both incoming gradients and the saved activation live through the convolutions' backward
// where eager holds the one gradient (ResNet-18's backward peak above eager's). As there, the peak falls in
// the first block's backward: the wide block after it leaves its large weight gradients live.
TEST_CASE("residual blocks' backward holds no more memory than eager's", "[training][memory]") {
  auto& allocator = jitc::bench::CountingAllocator::install();
  at::manual_seed(3);
  auto leaf = [](const at::Tensor& t) { return t.detach().requires_grad_(); };
  std::vector<at::Tensor> weights, scales, shifts;
  for (const auto& [out, in] : std::vector<std::pair<int64_t, int64_t>>{{8, 3}, {8, 8}, {8, 8}, {96, 8}, {96, 96}, {96, 96}}) {
    weights.push_back(leaf(at::randn({out, in, 3, 3}, at::kDouble) / (3 * in)));
    scales.push_back(leaf(at::rand({out}, at::kDouble) + 0.5));
    shifts.push_back(leaf(at::randn({out}, at::kDouble) / 10));
  }
  auto conv_bn = [&](const at::Tensor& x, int k, int64_t stride) {
    return at::batch_norm(at::conv2d(x, weights[k], {}, stride, 1), scales[k], shifts[k], {}, {}, true, 0.1, 1e-5, false);
  };
  auto block = [&](const at::Tensor& x, int k) { return at::relu(conv_bn(at::relu(conv_bn(x, k, 1)), k + 1, 1) + x); };
  auto net = [&](const at::Tensor& x) {
    const at::Tensor narrow = block(at::relu(conv_bn(x, 0, 1)), 1);
    const at::Tensor wide = block(at::relu(conv_bn(narrow, 3, 8)), 4);
    return wide.mean({2, 3}).pow(2).sum();
  };
  auto compiled = jitc::compile(net);
  const at::Tensor x = at::randn({8, 3, 32, 32}, at::kDouble);
  std::vector<at::Tensor> leaves = weights;
  leaves.insert(leaves.end(), scales.begin(), scales.end());
  leaves.insert(leaves.end(), shifts.begin(), shifts.end());
  auto backward_peak = [&](const at::Tensor& loss) {
    allocator.reset_peak();
    const int64_t before = allocator.live_bytes();
    loss.backward();
    return allocator.peak_bytes() - before;
  };
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call);
    for (auto& t : leaves) t.mutable_grad() = at::Tensor();
    const int64_t eager_peak = backward_peak(net(x));
    std::vector<at::Tensor> want;
    for (auto& t : leaves) want.push_back(t.grad()), t.mutable_grad() = at::Tensor();
    const int64_t compiled_peak = backward_peak(compiled(x));
    for (size_t k = 0; k < leaves.size(); ++k) CHECK(at::allclose(leaves[k].grad(), want[k], 1e-10, 1e-12));
    INFO("backward peak bytes: eager " << eager_peak << ", jitc " << compiled_peak);
    if (call > 0) CHECK(compiled_peak <= eager_peak);
  }
  CHECK(compiled.stats().hits == 2);
  CHECK(compiled.stats().eager_fallbacks == 0);
}

TEST_CASE("a Q-learning loss that picks each row's action by integer indexing trains compiled, with eager's gradients", "[training]") {
  check_q_learning(at::kCPU);
}

TEST_CASE("a parameter first read under a NoGradGuard, then in grad mode (embedding max_norm), trains compiled as in eager", "[training]") {
  check_parameter_first_read_without_grad(at::kCPU);
}

TEST_CASE("a callable that turns grad mode on inside a call made without grad returns what eager returns", "[training]") {
  check_grad_mode_turned_on_inside(at::kCPU);
}

TEST_CASE("outputs that are views of values computed inside the call can be written in place afterwards, as in eager", "[training]") {
  check_view_outputs_written_after_the_call(at::kCPU);
}

TEST_CASE("torch::optim steps called through a compiled function follow eager's, and their state stays usable", "[training]") {
  check_compiled_torch_optim_steps(at::kCPU);
}

TEST_CASE("whole training steps with zero_grad and backward and a torch::optim step inside follow eager's from a cold or a warm start",
          "[training]") {
  check_whole_training_steps(at::kCPU);
}

TEST_CASE("a step that reads .grad() of its tensor arguments compiles with eager's updates", "[training]") {
  check_step_reading_argument_grads(at::kCPU);
}

TEST_CASE("a step that resets its arguments' gradients to none runs eagerly and says why", "[training]") {
  check_step_resetting_argument_grads(at::kCPU);
}

TEST_CASE("a parameter first read without grad, grad mode turned on inside, view outputs and torch::optim steps hold in every mode",
          "[training]") {
  check_call_semantics_in_every_mode(at::kCPU);
}

TEST_CASE("C++ code in a compiled forward runs once on a call that traces it in grad mode, not again for its result", "[training]") {
  check_forward_code_runs_once_per_call(at::kCPU);
}

TEST_CASE("a training forward updating a buffer with a decay counted in C++ runs eagerly after its first hit, a constant decay compiles",
          "[training]") {
  check_training_state_updates(at::kCPU);
}
