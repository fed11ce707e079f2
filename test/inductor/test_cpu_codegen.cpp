// The CPU path end to end: kernel IR -> LLVM IR text -> ORC -> native code, checked against eager.
#include "inductor/kernel_ir.h"
#include "runtime/cpu_jit.h"

#include <jitc/errors.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

using jitc::inductor::Access;
using jitc::inductor::Expr;
using jitc::inductor::PointwiseKernel;
using jitc::inductor::ScalarOp;

namespace {

Access access_of(const at::Tensor& t, int buffer, at::IntArrayRef sizes) {
  const auto expanded = t.expand(sizes);  // broadcast dims get stride 0
  return {buffer, expanded.strides().vec(), expanded.storage_offset()};
}

// A kernel over out's sizes reading `inputs` (buffers 1..n) with the given body.
PointwiseKernel kernel_over(std::string name, const at::Tensor& out, const std::vector<at::Tensor>& inputs,
                            std::vector<Expr> body) {
  PointwiseKernel k;
  k.name = std::move(name);
  k.sizes = out.sizes().vec();
  k.num_inputs = static_cast<int>(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) k.loads.push_back(access_of(inputs[i], static_cast<int>(i) + 1, out.sizes()));
  k.store = access_of(out, 0, out.sizes());
  k.body = std::move(body);
  return k;
}

// relu(a * b + c) over a's sizes.
PointwiseKernel fused_kernel(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
  return kernel_over("fused_mul_add_relu", out, {a, b, c},
                     {{ScalarOp::kLoad, -1, -1, 0}, {ScalarOp::kLoad, -1, -1, 1}, {ScalarOp::kMul, 0, 1},
                      {ScalarOp::kLoad, -1, -1, 2}, {ScalarOp::kAdd, 2, 3}, {ScalarOp::kRelu, 4}});
}

void run(const jitc::runtime::CpuModule& module, const std::string& name, std::vector<at::Tensor> buffers) {
  std::vector<void*> pointers;
  for (auto& t : buffers) pointers.push_back(t.data_ptr());
  auto* fn = reinterpret_cast<void (*)(void**)>(module.symbol(name));
  REQUIRE(fn);
  fn(pointers.data());
}

}  // namespace

TEST_CASE("a fused pointwise kernel over strided and broadcast inputs matches eager bit for bit", "[inductor][cpu]") {
  const auto a = at::randn({5, 37});
  const auto b = at::randn({37, 5}).t();  // non-contiguous
  const auto c = at::randn({37});         // broadcast over rows
  c.data_ptr<float>()[3] = NAN;           // relu keeps NaN, as ATen does
  auto out = at::empty({5, 37});
  const auto kernel = fused_kernel(out, a, b, c);
  auto module = jitc::runtime::compile_cpu_module(jitc::inductor::emit_llvm_ir(kernel), kernel.name);
  run(*module, kernel.name, {out, a, b, c});
  const auto expected = at::relu(a * b + c);
  CHECK(at::equal(out.isnan(), expected.isnan()));
  CHECK(at::equal(at::nan_to_num(out), at::nan_to_num(expected)));
}

TEST_CASE("the inner loop of a contiguous kernel is vectorized for the host", "[inductor][cpu]") {
  const auto a = at::randn({4, 256});
  auto out = at::empty({4, 256});
  const auto k = kernel_over("sigmoid_times_two", out, {a},
                             {{ScalarOp::kLoad, -1, -1, 0}, {ScalarOp::kSigmoid, 0},
                              {ScalarOp::kConstant, -1, -1, -1, 2.0}, {ScalarOp::kMul, 1, 2}});
  auto module = jitc::runtime::compile_cpu_module(jitc::inductor::emit_llvm_ir(k), k.name);
  INFO(module->optimized_ir());
  CHECK_THAT(module->optimized_ir(), Catch::Contains("x float>"));  // <N x float>: vector code
  run(*module, k.name, {out, a});
  CHECK(at::allclose(out, at::sigmoid(a) * 2, 1e-6, 1e-6));
  CHECK_FALSE(jitc::runtime::cpu_target_description().empty());
}

TEST_CASE("kernels over empty iteration spaces do nothing", "[inductor][cpu]") {
  const auto a = at::randn({0, 8});
  auto out = at::empty({0, 8});
  const auto k = kernel_over("empty_kernel", out, {a}, {{ScalarOp::kLoad, -1, -1, 0}});
  auto module = jitc::runtime::compile_cpu_module(jitc::inductor::emit_llvm_ir(k), k.name);
  run(*module, k.name, {out, a});
  CHECK(out.numel() == 0);
}

TEST_CASE("invalid IR is a CompileError carrying LLVM's message", "[inductor][cpu]") {
  CHECK_THROWS_AS(jitc::runtime::compile_cpu_module("define void @f( {", "broken"), jitc::CompileError);
}

TEST_CASE("maximum and minimum propagate NaN from either side, as ATen does", "[inductor][cpu]") {
  auto a = at::randn({2, 16});
  auto b = at::randn({2, 16});
  a.data_ptr<float>()[1] = NAN;
  b.data_ptr<float>()[5] = NAN;
  for (auto op : {ScalarOp::kMaximum, ScalarOp::kMinimum}) {
    auto out = at::empty({2, 16});
    const auto k = kernel_over(op == ScalarOp::kMaximum ? "maximum" : "minimum", out, {a, b},
                               {{ScalarOp::kLoad, -1, -1, 0}, {ScalarOp::kLoad, -1, -1, 1}, {op, 0, 1}});
    auto module = jitc::runtime::compile_cpu_module(jitc::inductor::emit_llvm_ir(k), k.name);
    run(*module, k.name, {out, a, b});
    const auto expected = op == ScalarOp::kMaximum ? at::maximum(a, b) : at::minimum(a, b);
    CHECK(at::equal(out.isnan(), expected.isnan()));
    CHECK(at::equal(at::nan_to_num(out), at::nan_to_num(expected)));
  }
}
