// Traced graphs of pointwise ops lowered to one fused CPU kernel, run, and compared with eager.
#include "graph/functionalize.h"
#include "inductor/lowering.h"
#include "runtime/cpu_jit.h"
#include "support/trace_of.h"

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

namespace {

// Trace fn on clones, lower, compile, and run the kernel on the given inputs.
template <class F, class... T>
at::Tensor run_fused(F fn, std::string* why, const T&... args) {
  const std::vector<at::Tensor> inputs{args...};
  auto outcome = jitc::testing::trace_of(fn, args.clone()...);
  auto functional = jitc::graph::functionalize(outcome.graph, why);
  if (!functional) return {};
  auto fused = jitc::inductor::lower_to_one_kernel(*functional, "fused", why);
  if (!fused) return {};
  const auto& meta = functional->values[fused->output].meta;
  std::vector<int64_t> sizes, strides;
  for (const auto& e : meta.sizes) sizes.push_back(e.offset);
  for (const auto& e : meta.strides) strides.push_back(e.offset);
  auto out = at::empty_strided(sizes, strides);
  std::vector<void*> buffers{out.data_ptr()};
  for (size_t position : fused->inputs) buffers.push_back(inputs[functional->inputs[position].leaf].data_ptr());
  auto module = jitc::runtime::compile_cpu_module(jitc::inductor::emit_llvm_ir(fused->kernel), "fused");
  reinterpret_cast<void (*)(void**)>(module->symbol("fused"))(buffers.data());
  return out;
}

}  // namespace

TEST_CASE("a chain of pointwise ops with broadcasting and views fuses into one kernel equal to eager", "[inductor][lowering]") {
  auto fn = [](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
    return at::relu((a * b.t() - c) / 3.0 + 1.0).neg().exp().sigmoid();
  };
  const std::vector<at::Tensor> in = {at::randn({6, 9}), at::randn({9, 6}), at::randn({9})};
  std::string why;
  const auto got = run_fused(fn, &why, in[0], in[1], in[2]);
  INFO(why);
  REQUIRE(got.defined());
  CHECK(at::allclose(got, fn(in[0], in[1], in[2]), 1e-6, 1e-6));
}

TEST_CASE("pure arithmetic fuses bit-identically, signed zeros included", "[inductor][lowering]") {
  auto fn = [](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
    return at::maximum(a * b, c) - at::minimum(a, c) * 2;
  };
  std::vector<at::Tensor> in = {at::randn({3, 5}), at::randn({5}), at::randn({3, 1})};
  in[0].data_ptr<float>()[0] = -0.0f;
  std::string why;
  const auto got = run_fused(fn, &why, in[0], in[1], in[2]);
  INFO(why);
  REQUIRE(got.defined());
  CHECK(at::equal(got, fn(in[0], in[1], in[2])));
  CHECK(std::signbit(got.data_ptr<float>()[0]) == std::signbit(fn(in[0], in[1], in[2]).data_ptr<float>()[0]));
}

TEST_CASE("graphs with ops that have no lowering are refused with the op's name", "[inductor][lowering]") {
  std::string why;
  auto fn = [](const at::Tensor& a) { return a.sum(0); };
  CHECK_FALSE(run_fused(fn, &why, at::randn({3, 4})).defined());
  CHECK_THAT(why, Catch::Contains("aten::sum"));
  auto doubles = [](const at::Tensor& a) { return a * 2; };
  CHECK_FALSE(run_fused(doubles, &why, at::randn({3}, at::kDouble)).defined());
  CHECK_THAT(why, Catch::Contains("float32"));
}
