// CUDA convolutions in half and bfloat16 run channels-last (inductor/channels_last.h): cuDNN's tensor-core
// kernels are NHWC, and given NCHW operands it transposes them and its result inside every convolution.
// The rewritten graph is checked without a GPU's kernels (its metadata); results against eager and float64
// on a GPU ([cuda]).
#include "inductor/channels_last.h"
#include "support/parity.h"
#include "support/trace_of.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDAFunctions.h>

#include <vector>

namespace {

bool have_gpu() { return at::hasCUDA() && c10::cuda::device_count() > 0; }

struct Block {
  at::Tensor w1, w2, mean, var, gamma, beta;
};

Block in_float64(Block b) {
  for (at::Tensor* t : {&b.w1, &b.w2, &b.mean, &b.var, &b.gamma, &b.beta}) *t = t->to(at::kCPU, at::kDouble);
  return b;
}

Block random_block(int64_t channels, c10::ScalarType dtype, at::Device device) {
  auto on = [&](const at::Tensor& t) { return t.to(device, dtype); };
  return {on(at::randn({channels, channels, 3, 3}) * 0.2), on(at::randn({channels, channels, 1, 1}) * 0.3),
          on(at::randn({channels}) * 0.1),                 on(at::rand({channels}) + 0.5),
          on(at::rand({channels}) + 0.5),                  on(at::randn({channels}) * 0.1)};
}

// A ResNet basic block in eval mode: conv, batch norm, relu, a 1x1 conv, the residual add.
at::Tensor basic_block(const at::Tensor& x, const Block& b) {
  const auto y = at::relu(at::batch_norm(at::conv2d(x, b.w1, {}, 1, 1), b.gamma, b.beta, b.mean, b.var, false, 0.1, 1e-5, true));
  return at::relu(at::conv2d(y, b.w2) + x);
}

// The compiled result (second call: the first traces) judged against float64 next to eager's error.
std::string against_float64(const std::function<at::Tensor(const at::Tensor&)>& fn, const std::function<at::Tensor(const at::Tensor&)>& exact,
                            const at::Tensor& x) {
  auto compiled = jitc::compile(fn);
  compiled(x);
  const at::Tensor got = compiled(x);
  if (compiled.stats().programs_compiled != 1) return "no compiled program ran";
  return jitc::testing::difference_from_exact(got, fn(x), exact(x.to(at::kCPU, at::kDouble)).to(x.device()));
}

}  // namespace

// Without a GPU: the graph traced on the CPU, its values' metadata then put on a CUDA device.
TEST_CASE("CUDA: bf16 convolutions take channels-last operands, each weight copied once per call", "[inductor][nvrtc]") {
  if (!at::detail::getCUDAHooks().compiledWithCuDNN()) {
    WARN("LibTorch without cuDNN: skipped");
    return;
  }
  const Block first = random_block(16, at::kBFloat16, at::kCPU), second = random_block(16, at::kBFloat16, at::kCPU);
  auto two_blocks = [&](const at::Tensor& x) { return basic_block(basic_block(x, first), second).sum({2, 3}); };
  const auto x = at::randn({4, 16, 12, 12}, at::TensorOptions().dtype(at::kBFloat16));
  auto traced = jitc::testing::trace_of(two_blocks, x);
  for (auto& v : traced.graph.values) v.meta.device = c10::Device(c10::kCUDA, 0);
  const auto rewritten = jitc::inductor::convolutions_in_channels_last(traced.graph);
  int clones = 0, convolutions = 0;
  for (const auto& n : rewritten.nodes) {
    if (n.name() == "aten::clone") ++clones;
    // The weights' copies come first, with no extern call between them: one combo kernel.
    if (n.name() == "aten::clone" && convolutions > 0) CHECK(rewritten.values[n.args[0].value].producer >= 0);
    if (n.name() != "aten::conv2d") continue;
    ++convolutions;
    for (jitc::graph::ValueId v : {n.args[0].value, n.args[1].value, n.outputs[0].values[0]})
      CHECK((rewritten.values[v].meta.strides[1].offset == 1 || rewritten.values[v].meta.sizes[2].offset == 1));  // C has stride 1
  }
  CHECK(convolutions == 4);
  // The graph's input and the two 3x3 weights (a 1x1 weight's memory is channels-last already); the
  // values between convolutions (the first block's output too, which its residual add reads) are
  // computed channels-last.
  CHECK(clones == 3);
}

TEST_CASE("CUDA: channels-last convolutions in half and bfloat16 match eager and float64", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  for (c10::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    const Block block = random_block(16, dtype, at::kCUDA);
    const Block exact = in_float64(block);
    const auto depthwise = (at::randn({16, 1, 3, 3}) * 0.3).to(at::kCUDA, dtype), bias = (at::randn({32}) * 0.1).to(at::kCUDA, dtype);
    const auto pointwise = (at::randn({32, 16, 1, 1}) * 0.3).to(at::kCUDA, dtype);
    // A MobileNet-like tail: a strided depthwise convolution, then a 1x1 convolution with a bias.
    auto tail = [](const at::Tensor& x, const at::Tensor& dw, const at::Tensor& pw, const at::Tensor& b) {
      return at::conv2d(at::hardtanh(at::conv2d(x, dw, {}, 2, 1, 1, 16), 0, 6), pw, b).mean({2, 3});
    };
    auto net = [&](const at::Tensor& x) { return tail(basic_block(basic_block(x, block), block), depthwise, pointwise, bias); };
    auto net64 = [&](const at::Tensor& x) {
      auto cpu = [](const at::Tensor& t) { return t.to(at::kCPU, at::kDouble); };
      return tail(basic_block(basic_block(x, exact), exact), cpu(depthwise), cpu(pointwise), cpu(bias));
    };
    const auto x = at::randn({2, 16, 20, 20}).to(at::kCUDA, dtype);
    for (bool channels_last_input : {false, true}) {
      INFO(c10::toString(dtype) << ", channels-last input " << channels_last_input);
      CHECK(against_float64(net, net64, channels_last_input ? x.contiguous(at::MemoryFormat::ChannelsLast) : x) == "");
    }
  }
}

TEST_CASE("CUDA: a weight updated between calls is seen by the channels-last convolution", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  Block block = random_block(8, at::kBFloat16, at::kCUDA);
  auto net = [&](const at::Tensor& x) { return basic_block(x, block); };
  auto compiled = jitc::compile(net);
  const auto x = at::randn({2, 8, 10, 10}).to(at::kCUDA, at::kBFloat16);
  compiled(x);
  compiled(x);
  const std::vector<std::function<void()>> updates = {
      [&] { block.w1.mul_(0.5); },                           // in place: a new version
      [&] { block.w2.data().add_(0.25); },                   // through an alias PyTorch does not version
      [&] { block.w1.set_(at::randn_like(block.w1) * 0.1); }  // other memory
  };
  for (size_t k = 0; k < updates.size(); ++k) {
    INFO("update " << k);
    updates[k]();
    const auto want = basic_block(x.to(at::kCPU, at::kDouble), in_float64(block)).to(at::kCUDA);
    CHECK(jitc::testing::difference_from_exact(compiled(x), net(x), want) == "");
  }
  CHECK(compiled.stats().programs_compiled >= 1);  // ran compiled (a guard may recompile after set_)
}
