// CUDA code generation without a GPU: the kernels of a broad set of graphs (pointwise ops across
// dtypes, reductions, normalizations, views, indexing) print as CUDA C that NVRTC compiles to PTX for
// sm_90. Running them is the GPU host's job (tests tagged [cuda]).
#include "graph/passes.h"
#include "inductor/codegen_cuda.h"
#include "inductor/scheduler.h"
#include "runtime/cuda_jit.h"
#include "support/trace_of.h"

#include <jitc/errors.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <functional>

namespace {

using Fn = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;

const std::vector<std::pair<const char*, Fn>>& graphs() {
  static const std::vector<std::pair<const char*, Fn>> g = {
      {"pointwise chain", [](const at::Tensor& a, const at::Tensor& b) { return ((a * b + 1).relu() - a.sigmoid()).abs().sqrt(); }},
      {"math", [](const at::Tensor& a, const at::Tensor& b) { return a.exp() + b.tanh() + at::gelu(a) + at::silu(b) + a.sin() * b.cos(); }},
      {"more math", [](const at::Tensor& a, const at::Tensor& b) { return at::erf(a) + at::log1p(b.abs()) + at::expm1(a) + at::atan2(a, b) + a.pow(b.abs()); }},
      {"integer-ish", [](const at::Tensor& a, const at::Tensor& b) { return at::floor_divide(a, b.abs() + 1) + at::remainder(a, b.abs() + 1) + a.floor(); }},
      {"comparisons", [](const at::Tensor& a, const at::Tensor& b) { return at::where(a > b, a, b) + (a == b) + at::maximum(a, b); }},
      {"softmax", [](const at::Tensor& a, const at::Tensor&) { return at::softmax(a, -1); }},
      {"log_softmax", [](const at::Tensor& a, const at::Tensor&) { return at::log_softmax(a, -1); }},
      {"layer_norm", [](const at::Tensor& a, const at::Tensor& b) { return at::layer_norm(a, {a.size(-1)}, b.select(0, 0)); }},
      {"rms_norm", [](const at::Tensor& a, const at::Tensor& b) { return a + b * at::rsqrt((b * b).mean(-1, true) + 1e-6); }},
      {"reductions", [](const at::Tensor& a, const at::Tensor&) { return a.sum(-1) + a.amax(-1) + a.var(-1) + a.mean(-1); }},
      {"column sums", [](const at::Tensor& a, const at::Tensor&) { return a.sum(0) + a.amin(0); }},
      {"over dim 0", [](const at::Tensor& a, const at::Tensor&) { return at::softmax(a, 0) + a.argmax(0) + a.var(0); }},
      {"argmax", [](const at::Tensor& a, const at::Tensor&) { return a.argmax(-1) + std::get<1>(a.min(-1)); }},
      {"prod any", [](const at::Tensor& a, const at::Tensor&) { return (a * 0.1 + 1).prod(-1) + (a > 0).any(-1); }},
      {"logsumexp", [](const at::Tensor& a, const at::Tensor&) { return a.logsumexp({-1}); }},
      {"views", [](const at::Tensor& a, const at::Tensor& b) { return (a.t().contiguous() + 1).view({-1}) + b.t().reshape({-1}); }},
      {"cat pad", [](const at::Tensor& a, const at::Tensor& b) { return at::constant_pad_nd(at::cat({a, b.exp()}, 0), {1, 1}); }},
  };
  return g;
}

// Every configuration mode=max-autotune may try, under its own name, in one source.
std::string all_variants(const jitc::inductor::Kernel& kernel, bool index32) {
  std::string source;
  for (const auto& config : jitc::inductor::cuda_config_candidates(kernel))
    source += jitc::inductor::emit_cuda(kernel, index32, config, kernel.name + "_t" + std::to_string(config.threads) + "_" + std::to_string(config.tile) +
                                                       "_c" + std::to_string(config.columns));
  return source;
}

}  // namespace

TEST_CASE("kernels print as CUDA C that NVRTC compiles for sm_90", "[inductor][nvrtc]") {
  if (!jitc::runtime::nvrtc_available()) {
    WARN("libnvrtc not found: skipped");
    return;
  }
  int kernels = 0;
  // [6, 10]: rows shorter than a warp; [3, 1000]: persistent rows of several positions per thread,
  // not a multiple of the block.
  for (auto shape : {std::vector<int64_t>{6, 10}, std::vector<int64_t>{3, 1000}})
  for (auto dtype : {at::kFloat, at::kHalf, at::kBFloat16, at::kDouble, at::kInt, at::kLong, at::kBool}) {
    for (const auto& [name, fn] : graphs()) {
      const auto a = (at::randn(shape) * 3).to(dtype), b = (at::randn(shape) * 3).to(dtype);
      try {
        fn(a, b);
      } catch (const std::exception&) {
        continue;  // eager rejects this dtype for this graph
      }
      auto f = fn;
      auto outcome = jitc::testing::trace_of(f, a, b);
      const auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(outcome.graph));
      const auto plan = jitc::inductor::schedule(g, "k", {});
      for (bool index32 : {false, true}) {
        std::string source = jitc::inductor::cuda_prelude();
        for (const auto& k : plan.kernels) source += all_variants(k.kernel, index32);
        INFO(name << " " << c10::toString(dtype) << " " << shape[1] << (index32 ? " 32-bit indices" : " 64-bit indices"));
        std::string ptx;
        CHECK_NOTHROW(ptx = jitc::runtime::nvrtc_compile(source, "test", "sm_90", /*cubin=*/false));
        CHECK(ptx.find(".entry") != std::string::npos);
      }
      kernels += static_cast<int>(plan.kernels.size());
    }
  }
  CHECK(kernels > 100);
}

// A source NVRTC rejects: the CompileError names the program and carries NVRTC's own diagnostic (with
// the line it points at), for the cubin and the PTX NVRTC is asked for. (Saving the source under
// JITC_DEBUG_DIR happens a layer up, in runtime/program.cpp.)
TEST_CASE("a source NVRTC rejects throws a CompileError with NVRTC's log", "[inductor][nvrtc]") {
  if (!jitc::runtime::nvrtc_available()) {
    WARN("libnvrtc not found: skipped");
    return;
  }
  const std::string source = jitc::inductor::cuda_prelude() +
                             "extern \"C\" __global__ void k_broken_0(float* out) { out[0] = undefined_value; }\n";
  for (bool cubin : {true, false}) {
    INFO((cubin ? "cubin" : "PTX"));
    try {
      jitc::runtime::nvrtc_compile(source, "broken_graph", "sm_90", cubin);
      FAIL("NVRTC accepted a source that uses an undeclared identifier");
    } catch (const jitc::CompileError& e) {
      const std::string message = e.what();
      CHECK_THAT(message, Catch::Contains("could not compile broken_graph for sm_90"));
      CHECK_THAT(message, Catch::Contains("identifier \"undefined_value\" is undefined"));  // NVRTC's log
      CHECK_THAT(message, Catch::Contains("broken_graph.cu("));  // the log's file(line) of the error
      CHECK_THAT(message, Catch::Contains("k_broken_0"));        // the source follows the log
    }
  }
}
