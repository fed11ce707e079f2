// CUDA code generation without a GPU: the kernels of a broad set of graphs (pointwise ops across
// dtypes, reductions, normalizations, views, indexing) print as CUDA C that NVRTC compiles to PTX for
// sm_90. Running them is the GPU host's job (tests tagged [cuda]).
#include "graph/generalize.h"
#include "graph/passes.h"
#include "inductor/cuda/codegen.h"
#include "inductor/scheduler.h"
#include "inductor/cuda/jit.h"
#include "inductor/random_graphs.h"
#include "support/scoped_env.h"
#include "support/trace_of.h"

#include <jitc/errors.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>

namespace {

using Fn = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;

const std::vector<std::pair<const char*, Fn>>& graphs() {
  static const std::vector<std::pair<const char*, Fn>> g = {
      {"pointwise chain", [](const at::Tensor& a, const at::Tensor& b) { return ((a * b + 1).relu() - a.sigmoid()).abs().sqrt(); }},
      {"math", [](const at::Tensor& a, const at::Tensor& b) { return a.exp() + b.tanh() + at::gelu(a) + at::silu(b) + a.sin() * b.cos(); }},
      {"more math", [](const at::Tensor& a,
                       const at::Tensor& b) { return at::erf(a) + at::log1p(b.abs()) + at::expm1(a) + at::atan2(a, b) + a.pow(b.abs()); }},
      {"integer-ish", [](const at::Tensor& a,
                         const at::Tensor& b) { return at::floor_divide(a, b.abs() + 1) + at::remainder(a, b.abs() + 1) + a.floor(); }},
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
      {"softmax plus row sum", [](const at::Tensor& a, const at::Tensor&) { return at::softmax(a * 0.125, -1) + a.sum(-1, true); }},
      {"sums of row values",  // reductions over no dims, of values computed after the row's first reduction
       [](const at::Tensor& a, const at::Tensor& b) {
         const auto s = a.abs().sum().sqrt();
         return (s.tanh() * b.select(0, 0).select(0, 0)).sum() + (s * b.select(0, 0).select(0, 1)).sum();
       }},
      {"var_mean", [](const at::Tensor& a, const at::Tensor& b) { auto [v, m] = at::var_mean(a, {1}, 0); return v * 10 + m + b.sum(-1); }},
      {"views", [](const at::Tensor& a, const at::Tensor& b) { return (a.t().contiguous() + 1).view({-1}) + b.t().reshape({-1}); }},
      {"cat pad",
       [](const at::Tensor& a, const at::Tensor& b) {
         return at::constant_pad_nd(at::cat({a, b.exp()}, 0), {1, 1});
       }},
  };
  return g;
}

// Every configuration mode=max-autotune may try, under its own name, in one source.
std::string all_variants(const jitc::inductor::Kernel& kernel, bool index32) {
  std::string source;
  for (const auto& config : jitc::inductor::cuda_config_candidates(kernel))
    source += jitc::inductor::emit_cuda(
        kernel, index32, config,
        kernel.name + "_t" + std::to_string(config.threads) + "_" + std::to_string(config.tile) + "_c" + std::to_string(config.columns));
  return source;
}

// The graph as if traced on a CUDA device: the scheduler then follows the CUDA backend's Target (reduction
// loops merged, merge_reduction_loops.h) rather than the CPU's.
jitc::graph::Graph on_cuda(jitc::graph::Graph g) {
  for (auto& v : g.values) v.meta.device = c10::Device(c10::kCUDA, 0);
  return g;
}

std::string broken_source() {
  return jitc::inductor::cuda_prelude() + "extern \"C\" __global__ void k_broken_0(float* out) { out[0] = undefined_value; }\n";
}

// The message of the CompileError NVRTC's rejection of broken_source() gives.
std::string broken_compile_error(bool cubin) {
  try {
    jitc::inductor::cuda::nvrtc_compile(broken_source(), "broken_graph", "sm_90", cubin);
  } catch (const jitc::CompileError& e) {
    return e.what();
  }
  FAIL("NVRTC accepted a source that uses an undeclared identifier");
  return "";
}

// JITC_DEBUG_DIR set to a fresh temporary directory for one scope (env_debug_dir reads it on every call).
class ScopedDebugDir {
 public:
  ScopedDebugDir() : env_("JITC_DEBUG_DIR", dir_.path.c_str()) {}
  std::string dir() const { return dir_.path.string(); }

 private:
  jitc::testing::TempDir dir_;  // removed after env_ is restored
  jitc::testing::ScopedEnv env_;
};

}  // namespace

// Compiles every autotune variant of the kernels of graph `fn` on inputs of this shape and dtype (with
// 64- and 32-bit indices), scheduled for the CPU's target and for the CUDA one; returns the kernels, or -1
// when eager rejects the dtype.
int check_kernels_compile(const char* name, const Fn& fn, const std::vector<int64_t>& shape, c10::ScalarType dtype,
                          std::vector<jitc::inductor::Kernel>* kernels_out = nullptr) {
  const auto a = (at::randn(shape) * 3).to(dtype), b = (at::randn(shape) * 3).to(dtype);
  try {
    fn(a, b);
  } catch (const std::exception&) {
    return -1;  // eager rejects this dtype for this graph
  }
  auto f = fn;
  auto outcome = jitc::testing::trace_of(f, a, b);
  const auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(outcome.graph));
  auto plan = jitc::inductor::schedule(g, "k", {});
  for (auto& k : jitc::inductor::schedule(on_cuda(g), "cuda", {}).kernels) plan.kernels.push_back(std::move(k));
  for (bool index32 : {false, true}) {
    std::string source = jitc::inductor::cuda_prelude();
    for (const auto& k : plan.kernels) source += all_variants(k.kernel, index32);
    INFO(name << " " << c10::toString(dtype) << " " << shape[1] << (index32 ? " 32-bit indices" : " 64-bit indices"));
    std::string ptx;
    CHECK_NOTHROW(ptx = jitc::inductor::cuda::nvrtc_compile(source, "test", "sm_90", /*cubin=*/false));
    CHECK(ptx.find(".entry") != std::string::npos);
  }
  if (kernels_out)
    for (const auto& k : plan.kernels) kernels_out->push_back(k.kernel);
  return static_cast<int>(plan.kernels.size());
}

TEST_CASE("kernels print as CUDA C that NVRTC compiles for sm_90", "[inductor][nvrtc]") {
  if (!jitc::inductor::cuda::nvrtc_available()) {
    WARN("libnvrtc not found: skipped");
    return;
  }
  int kernels = 0;
  // [6, 10]: rows shorter than a warp; [3, 1000]: persistent rows of several positions per thread,
  // not a multiple of the block.
  for (auto shape : {std::vector<int64_t>{6, 10}, std::vector<int64_t>{3, 1000}})
    for (auto dtype : {at::kFloat, at::kHalf, at::kBFloat16, at::kDouble, at::kInt, at::kLong, at::kBool})
      for (const auto& [name, fn] : graphs()) kernels += std::max(0, check_kernels_compile(name, fn, shape, dtype));
  CHECK(kernels > 100);
}

TEST_CASE("reductions of few long rows print as split kernels that NVRTC compiles", "[inductor][nvrtc]") {
  if (!jitc::inductor::cuda::nvrtc_available()) {
    WARN("libnvrtc not found: skipped");
    return;
  }
  std::vector<jitc::inductor::Kernel> kernels;
  for (auto dtype : {at::kFloat, at::kHalf, at::kLong, at::kBool})
    for (const auto& [name, fn] : graphs())
      if (std::string(name) == "reductions" || std::string(name) == "argmax" || std::string(name) == "prod any")
        check_kernels_compile(name, fn, {2, 40000}, dtype, &kernels);
  int split = 0, variances = 0;
  for (const auto& k : kernels) {
    split += jitc::inductor::split_count(k) > 0;
    variances += jitc::inductor::split_count(k) > 0 && !jitc::inductor::welford_pairs(k).empty();
  }
  CHECK(split >= 4);      // at least one split kernel per dtype
  CHECK(variances >= 2);  // var(-1) of "reductions" in float and half: Welford partials
}

TEST_CASE("column reductions of tall inputs print as split kernels that NVRTC compiles", "[inductor][nvrtc]") {
  if (!jitc::inductor::cuda::nvrtc_available()) {
    WARN("libnvrtc not found: skipped");
    return;
  }
  std::vector<jitc::inductor::Kernel> kernels;
  const Fn column_sums = [](const at::Tensor& a, const at::Tensor&) { return a.sum(0) + a.amin(0); };
  for (auto dtype : {at::kFloat, at::kHalf, at::kDouble, at::kLong})
    check_kernels_compile("column sums", column_sums, {20000, 100}, dtype, &kernels);
  int split = 0;
  for (const auto& k : kernels) {
    const auto config = jitc::inductor::default_cuda_config(k);
    if (config.split == 0) continue;
    ++split;
    CHECK(config.columns == jitc::inductor::column_split_width(k));
    CHECK(config.columns * jitc::inductor::column_width(k) > 0);
  }
  CHECK(split == 8);  // one per dtype and target
}

// Reductions over a dim of symbolic size (a batch norm's statistics over a dynamic batch, column sums over
// dynamic rows) split too: the split count is chosen for a nominal size, the slices' bounds at run time,
// and a variance over the symbolic count still takes Welford's partials. test_cuda's "reductions over a
// dynamic dim" runs them.
TEST_CASE("reductions over a symbolic dim print as split kernels that NVRTC compiles", "[inductor][nvrtc]") {
  if (!jitc::inductor::cuda::nvrtc_available()) {
    WARN("libnvrtc not found: skipped");
    return;
  }
  const Fn statistics = [](const at::Tensor& a, const at::Tensor&) {
    return at::rsqrt(a.var({0, 2, 3}, false) + 1e-5) + a.mean({0, 2, 3});
  };
  const Fn column_sums = [](const at::Tensor& a, const at::Tensor&) { return a.sum(0) + a.amax(0); };
  const auto symbolic_kernels = [](const Fn& fn, const std::vector<int64_t>& sizes, c10::ScalarType dtype) {
    auto graph_at = [&](int64_t batch) {
      std::vector<int64_t> shape = sizes;
      shape[0] = batch;
      auto f = fn;
      const auto a = at::randn(shape).to(dtype);
      return jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(jitc::testing::trace_of(f, a, a).graph));
    };
    std::string why;
    const auto g = jitc::graph::generalize(graph_at(40), graph_at(48), jitc::graph::SymbolValues{{40}, {48}}, &why);
    INFO(why);
    REQUIRE(g);
    REQUIRE(g->num_symbols == 1);
    std::vector<jitc::inductor::Kernel> kernels;
    for (const auto& k : jitc::inductor::schedule(*g, "k", {}).kernels) kernels.push_back(k.kernel);
    return kernels;
  };
  for (auto dtype : {at::kFloat, at::kHalf, at::kBFloat16}) {
    INFO(c10::toString(dtype));
    int split = 0, variances = 0, columns = 0;
    for (const auto& [fn, sizes] : {std::make_pair(statistics, std::vector<int64_t>{0, 16, 32, 32}),
                                    std::make_pair(column_sums, std::vector<int64_t>{0, 300})})
      for (const auto& k : symbolic_kernels(fn, sizes, dtype)) {
        const auto config = jitc::inductor::default_cuda_config(k);
        split += config.split > 0;
        variances += config.split > 0 && !jitc::inductor::welford_pairs(k).empty();
        columns += config.split > 0 && config.columns > 0;
        for (bool index32 : {false, true})
          CHECK_NOTHROW(jitc::inductor::cuda::nvrtc_compile(jitc::inductor::cuda_prelude() + all_variants(k, index32), "test", "sm_90", false));
      }
    CHECK(variances == 1);  // the statistics' kernel
    CHECK(columns == 1);    // the column sums
    CHECK(split == 2);
  }
}

// Persistent rows (softmax, layer_norm) read and write 16 bytes at once: groups of 4 floats, 8 halves,
// 2 doubles per access; rows whose innermost extent is not a multiple of the group stay element-wise.
TEST_CASE("persistent rows of contiguous accesses print 16-byte groups", "[inductor][nvrtc]") {
  const auto source_of = [](const Fn& fn, const at::Tensor& a) {
    auto f = fn;
    auto outcome = jitc::testing::trace_of(f, a, a);
    const auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(outcome.graph));
    std::string source;
    for (const auto& k : jitc::inductor::schedule(g, "k", {}).kernels) source += jitc::inductor::emit_cuda(k.kernel, true);
    return source;
  };
  const auto count = [](const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  // softmax reads its row once into registers; layer_norm its row and its weight
  for (const auto& [graph, reads] : {std::make_pair("softmax", 1), std::make_pair("layer_norm", 2)})
    for (auto dtype : {at::kFloat, at::kHalf, at::kDouble}) {
      const auto fn = std::find_if(graphs().begin(), graphs().end(), [&](const auto& g) { return std::string(g.first) == graph; })->second;
      INFO(graph << " " << c10::toString(dtype));
      const std::string grouped = source_of(fn, at::ones({64, 1024}, dtype));
      CHECK(count(grouped, "= *(const uint4*)(buf") == reads);
      CHECK(count(grouped, "*(uint4*)(buf") == 1);  // the output's store
      CHECK(count(source_of(fn, at::ones({64, 1021}, dtype)), "uint4") == 0);
    }
}

// A vector group's 16-byte access tests its address only where the sizes do not prove it aligned (the
// runtime copies inputs that start off a 16-byte boundary), and tests that the group is whole only
// where the element count is not a multiple of it: no test for contiguous [64, 1024] inputs, the
// whole-group test alone for 21 elements, the alignment test for a slice at an odd offset inside the graph.
TEST_CASE("vector groups test alignment only where the sizes do not prove it", "[inductor][nvrtc]") {
  const auto source_of = [](const std::function<at::Tensor(const at::Tensor&)>& fn, const at::Tensor& a) {
    auto f = fn;
    auto outcome = jitc::testing::trace_of(f, a);
    const auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(outcome.graph));
    std::string source;
    for (const auto& k : jitc::inductor::schedule(g, "k", {}).kernels) source += jitc::inductor::emit_cuda(k.kernel, true);
    return source;
  };
  const auto add = [](const at::Tensor& x) { return x + 1; };
  const auto softmax = [](const at::Tensor& x) { return at::softmax(x, -1); };
  const auto mean_square = [](const at::Tensor& x) { return (x * x).mean(); };
  const auto sliced = [](const at::Tensor& x) { return x.narrow(1, 1, 1020) + 1; };
  const std::string address_test = "& 15) == 0", whole = "whole";
  for (const auto& [name, source] :
       {std::make_pair("add", source_of(add, at::ones({64, 1024}))), std::make_pair("softmax", source_of(softmax, at::ones({64, 1024}))),
        std::make_pair("mean", source_of(mean_square, at::ones({4096, 4096})))}) {
    INFO(name);
    CHECK_THAT(source, Catch::Contains("uint4"));
    CHECK_THAT(source, !Catch::Contains(address_test));
    CHECK_THAT(source, !Catch::Contains(whole));
  }
  const std::string ragged = source_of(add, at::ones({3, 7}));
  CHECK_THAT(ragged, Catch::Contains("uint4"));
  CHECK_THAT(ragged, Catch::Contains(whole));
  CHECK_THAT(ragged, !Catch::Contains(address_test));
  const std::string odd = source_of(sliced, at::ones({64, 1021}));
  CHECK_THAT(odd, Catch::Contains("uint4"));
  CHECK_THAT(odd, Catch::Contains(address_test));
}

// A thread that takes two whole groups of a tile loads both into register arrays [2][4] before either
// group's arithmetic; groups that may be partial (rows of 7) keep the loop over one group at a time.
TEST_CASE("pointwise kernels load all of a thread's whole groups before computing", "[inductor][nvrtc]") {
  const auto source_of = [](const at::Tensor& a) {
    auto f = [](const at::Tensor& x) { return x * 3 + 1; };
    auto outcome = jitc::testing::trace_of(f, a);
    const auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(outcome.graph));
    std::string source;
    for (const auto& k : jitc::inductor::schedule(g, "k", {}).kernels) source += jitc::inductor::emit_cuda(k.kernel, true);
    return source;
  };
  const std::string batched = source_of(at::ones({64, 1024}));
  CHECK_THAT(batched, Catch::Contains("[2][4];"));
  const auto first_load = batched.find("= *(const uint4*)(buf0"), first_multiply = batched.find("= (float)(");
  REQUIRE(first_load != std::string::npos);
  CHECK(first_load < first_multiply);
  CHECK_THAT(batched, !Catch::Contains("blockDim.x"));
  const std::string ragged = source_of(at::ones({3, 7}));
  CHECK_THAT(ragged, !Catch::Contains("][4];"));
  CHECK_THAT(ragged, Catch::Contains("blockDim.x"));
  if (!jitc::inductor::cuda::nvrtc_available()) return;
  for (const auto& source : {batched, ragged})
    CHECK_NOTHROW(jitc::inductor::cuda::nvrtc_compile(jitc::inductor::cuda_prelude() + source, "test", "sm_90", /*cubin=*/false));
}

// A pointwise kernel's vector group is unrolled over its elements: a long body takes narrower groups
// (kMaxUnrolledGroupExprs), so that NVRTC compiles less code: 16-byte accesses of halves for a short
// chain, 8 bytes for a longer one, 4 for a longer still, never narrower; and a thread takes its groups
// one at a time unless the body is short.
TEST_CASE("pointwise kernels with long bodies take narrower vector groups", "[inductor][nvrtc]") {
  const auto source_of = [](int64_t links, at::ScalarType dtype = at::kHalf) {
    auto f = [links](const at::Tensor& x) {
      auto y = x;
      for (int64_t i = 0; i < links; ++i) y = y * 1.01 + x;
      return y;
    };
    auto outcome = jitc::testing::trace_of(f, at::ones({64, 1024}, dtype));
    const auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(outcome.graph));
    std::string source;
    for (const auto& k : jitc::inductor::schedule(g, "k", {}).kernels) source += jitc::inductor::emit_cuda(k.kernel, true);
    return source;
  };
  const std::string short_chain = source_of(4), longer = source_of(16), longest = source_of(200);
  CHECK_THAT(short_chain, Catch::Contains("*(const uint4*)(buf0"));
  CHECK_THAT(longer, Catch::Contains("*(const uint2*)(buf0"));
  CHECK_THAT(longest, Catch::Contains("*(const unsigned int*)(buf0"));
  CHECK_THAT(longest, !Catch::Contains("uint4"));
  // Floats: four per group, two groups per thread of 128 over 1024-element tiles (group_passes), or
  // one group at a time.
  CHECK_THAT(source_of(4, at::kFloat), Catch::Contains("][4];"));
  const std::string one_group = source_of(32, at::kFloat);
  CHECK_THAT(one_group, Catch::Contains("*(const uint4*)(buf0"));
  CHECK_THAT(one_group, !Catch::Contains("]["));
  if (!jitc::inductor::cuda::nvrtc_available()) return;
  for (const auto& source : {longer, longest})
    CHECK_NOTHROW(jitc::inductor::cuda::nvrtc_compile(jitc::inductor::cuda_prelude() + source, "test", "sm_90", /*cubin=*/false));
}

// Every kernel is launched to overlap the stream's previous one (programmatic dependent launch), so each
// function must wait for the previous grid before its first memory access: all accesses index through
// blockIdx or threadIdx, which the wait precedes.
TEST_CASE("every CUDA function waits for the previous kernel before it touches memory", "[inductor][nvrtc]") {
  const std::vector<std::pair<const char*, std::function<at::Tensor(const at::Tensor&)>>> cases = {
      {"pointwise", [](const at::Tensor& x) { return x * 3 + 1; }},
      {"softmax", [](const at::Tensor& x) { return at::softmax(x, -1); }},
      {"column sum", [](const at::Tensor& x) { return x.sum(0); }},
      {"split sum", [](const at::Tensor& x) { return x.sum(); }},
  };
  for (const auto& [name, f] : cases) {
    auto outcome = jitc::testing::trace_of(f, at::ones({512, 4096}));
    const auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(outcome.graph));
    int functions = 0;
    for (const auto& k : jitc::inductor::schedule(g, "k", {}).kernels)
      for (const auto& function :
           jitc::inductor::emit_cuda_functions(k.kernel, true, jitc::inductor::default_cuda_config(k.kernel), k.kernel.name)) {
        INFO(name << ":\n" << function.source);
        ++functions;
        const auto trigger = function.source.find("let_dependents_launch();"), wait = function.source.find("wait_for_previous_grid();");
        const auto first_index = std::min(function.source.find("blockIdx"), function.source.find("threadIdx"));
        REQUIRE(wait != std::string::npos);
        CHECK(trigger < wait);
        CHECK(wait < first_index);
      }
    CHECK(functions >= 1);
  }
}

// A function takes one tile per block when its constant sizes keep the tiles within a launch's blocks,
// and loops over tiles (grid-stride) when there may be more.
TEST_CASE("kernels loop over tiles only when they may outnumber a launch's blocks", "[inductor][nvrtc]") {
  const auto source_of = [](const at::Tensor& a) {
    auto f = [](const at::Tensor& x) { return x.sum(1); };
    auto outcome = jitc::testing::trace_of(f, a);
    const auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(outcome.graph));
    std::string source;
    for (const auto& k : jitc::inductor::schedule(g, "k", {}).kernels) source += jitc::inductor::emit_cuda(k.kernel, true);
    return source;
  };
  const std::string loop = "t += gridDim.x", one_tile = "const idx_t t = blockIdx.x;";
  const std::string few = source_of(at::ones({1024, 2}));
  CHECK_THAT(few, Catch::Contains(one_tile));
  CHECK_THAT(few, !Catch::Contains(loop));
  const std::string many = source_of(at::ones({jitc::inductor::kMaxGridBlocks + 1, 2}));
  CHECK_THAT(many, Catch::Contains(loop));
  CHECK_THAT(many, !Catch::Contains(one_tile));
}

// A source NVRTC rejects: the CompileError names the program and carries NVRTC's own diagnostic (with
// the line it points at), for the cubin and the PTX NVRTC is asked for.
TEST_CASE("a source NVRTC rejects throws a CompileError with NVRTC's log", "[inductor][nvrtc]") {
  if (!jitc::inductor::cuda::nvrtc_available()) {
    WARN("libnvrtc not found: skipped");
    return;
  }
  for (bool cubin : {true, false}) {
    INFO((cubin ? "cubin" : "PTX"));
    const std::string message = broken_compile_error(cubin);
    CHECK_THAT(message, Catch::Contains("could not compile broken_graph for sm_90"));
    CHECK_THAT(message, Catch::Contains("identifier \"undefined_value\" is undefined"));  // NVRTC's log
    CHECK_THAT(message, Catch::Contains("broken_graph.cu("));                             // the log's file(line) of the error
    CHECK_THAT(message, Catch::Contains("\n--- source ---\n"));                           // what() does not stop at the log's NUL
    CHECK_THAT(message, Catch::Contains("k_broken_0"));                                   // the source follows the log
    CHECK_THAT(message, !Catch::Contains("source saved as"));                             // JITC_DEBUG_DIR is unset
  }
}

// With JITC_DEBUG_DIR set the rejected source is written where the graph's other dumps go, and the
// message names that file between NVRTC's log and the source.
TEST_CASE("a source NVRTC rejects is kept under JITC_DEBUG_DIR", "[inductor][nvrtc]") {
  if (!jitc::inductor::cuda::nvrtc_available()) {
    WARN("libnvrtc not found: skipped");
    return;
  }
  const ScopedDebugDir debug_dir;
  const std::string message = broken_compile_error(/*cubin=*/true);
  const std::string path = (std::filesystem::path(debug_dir.dir()) / "broken_graph" / "kernels.cu").string();
  const size_t saved = message.find("(source saved as " + path + ")");
  CHECK(saved != std::string::npos);
  CHECK(saved < message.find("--- source ---"));
  CHECK(message.find("is undefined") < saved);  // after NVRTC's log
  std::ifstream file(path);
  const std::string kept((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  CHECK(kept == broken_source());
}

// The architecture compile_cuda_module asks NVRTC for, from the device's and the ones NVRTC lists.
TEST_CASE("CUDA modules are compiled for the device's architecture, or as PTX for an older one", "[inductor][nvrtc]") {
  using jitc::inductor::cuda::choose_cuda_target;
  const std::vector<int> nvrtc13 = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
  auto h100 = choose_cuda_target("sm_90", nvrtc13);
  REQUIRE(h100);
  CHECK(h100->arch == "sm_90");
  CHECK(h100->cubin);
  auto newer = choose_cuda_target("sm_130", nvrtc13);  // a GPU newer than NVRTC: PTX the driver compiles
  REQUIRE(newer);
  CHECK(newer->arch == "sm_121");
  CHECK_FALSE(newer->cubin);
  auto unlisted = choose_cuda_target("sm_101", {121, 90, 100, 80});  // any order; newest below it
  REQUIRE(unlisted);
  CHECK(unlisted->arch == "sm_100");
  CHECK_FALSE(unlisted->cubin);
  CHECK_FALSE(choose_cuda_target("sm_70", nvrtc13));  // Volta: dropped by NVRTC 13
}

// A graph's functions dealt into fewer programs than functions: each compiles inside its bundle, though
// bundled functions declare the same names (the index type, with 32- and 64-bit indices side by side),
// and every kernel is in exactly one program under its own name.
TEST_CASE("a graph's CUDA functions bundled into fewer NVRTC programs compile with their own names", "[inductor][nvrtc]") {
  using jitc::inductor::cuda::CudaSource;
  std::vector<CudaSource> functions;
  for (const char* name : {"softmax", "layer_norm", "reductions", "pointwise chain", "cat pad", "over dim 0", "column sums"}) {
    const auto it = std::find_if(graphs().begin(), graphs().end(), [&](const auto& g) { return std::string(g.first) == name; });
    REQUIRE(it != graphs().end());
    const auto a = at::randn({8, 40}), b = at::randn({8, 40});
    auto f = it->second;
    const auto g = jitc::graph::eliminate_dead_code(jitc::testing::trace_of(f, a, b).graph);
    for (const auto& k : jitc::inductor::schedule(g, "k", {}).kernels) {
      const std::string function = "k" + std::to_string(functions.size());
      functions.push_back({function, jitc::inductor::emit_cuda(k.kernel, functions.size() % 2 == 0, jitc::inductor::default_cuda_config(k.kernel),
                                                               function)});
    }
  }
  REQUIRE(functions.size() >= 6);
  const std::string prelude = jitc::inductor::cuda_prelude();

  const auto bundles = jitc::inductor::cuda::bundle_functions(prelude, functions, 2);
  REQUIRE(bundles.size() == 2);
  CHECK(bundles[0].source.size() + bundles[1].source.size() > 2 * prelude.size());
  std::map<std::string, int> entries;  // kernel -> programs whose PTX defines it
  for (const auto& program : bundles) {
    INFO(program.name);
    CHECK(program.source.rfind(prelude, 0) == 0);
    std::string ptx;
    REQUIRE_NOTHROW(ptx = jitc::inductor::cuda::nvrtc_compile(program.source, program.name, "sm_90", /*cubin=*/false));
    for (const auto& f : functions)
      if (ptx.find(".entry " + f.name + "(") != std::string::npos) ++entries[f.name];
  }
  for (const auto& f : functions) CHECK(entries[f.name] == 1);

  // No more functions than programs: each function its own program, as printed.
  const auto separate = jitc::inductor::cuda::bundle_functions(prelude, functions, functions.size());
  REQUIRE(separate.size() == functions.size());
  for (size_t i = 0; i < functions.size(); ++i) {
    CHECK(separate[i].name == functions[i].name);
    CHECK(separate[i].source == prelude + functions[i].source);
  }
}

namespace {

int reductions_in(const jitc::inductor::Kernel& k) {
  return static_cast<int>(
      std::count_if(k.body.begin(), k.body.end(), [](const jitc::inductor::Expr& e) { return e.op == jitc::inductor::ScalarOp::kReduce; }));
}

}  // namespace

// A batch norm's backward sums dy and (x - mean) * dy per channel (dy through a ReLU's mask here). On the
// CUDA target one loop folds both, so the activation, the mask and dy are read once, at every layout: a
// block per channel, a channel's slices over blocks (the partial pass, in vector groups of contiguous
// floats), channels side by side (channels-last). The CPU target keeps a loop per reduction.
TEST_CASE("independent reductions of one space share a loop on the CUDA target", "[inductor][nvrtc]") {
  if (!jitc::inductor::cuda::nvrtc_available()) {
    WARN("libnvrtc not found: skipped");
    return;
  }
  const auto backward_sums = [](const at::Tensor& x, const at::Tensor& dy) {
    const auto mean = x.select(0, 0).select(1, 0).select(1, 0).view({1, -1, 1, 1});
    const auto masked = at::threshold_backward(dy, x, 0);
    return masked.sum({0, 2, 3}) + ((x - mean) * masked).sum({0, 2, 3});
  };
  for (const auto& [shape, layout] : {std::make_pair(std::vector<int64_t>{8, 16, 10, 10}, at::MemoryFormat::Contiguous),
                                      std::make_pair(std::vector<int64_t>{32, 4, 64, 64}, at::MemoryFormat::Contiguous),
                                      std::make_pair(std::vector<int64_t>{8, 16, 32, 32}, at::MemoryFormat::ChannelsLast)})
    for (auto dtype : {at::kFloat, at::kBFloat16}) {
      INFO(shape[0] << "x" << shape[1] << "x" << shape[2] << " " << c10::toString(dtype) << " " << layout);
      const auto x = at::randn(shape).to(dtype).contiguous(layout), dy = at::randn(shape).to(dtype).contiguous(layout);
      auto f = backward_sums;
      const auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(jitc::testing::trace_of(f, x, dy).graph));
      const auto on_cpu = jitc::inductor::schedule(g, "k", {}), cuda = jitc::inductor::schedule(on_cuda(g), "k", {});
      REQUIRE(on_cpu.kernels.size() == 1);
      REQUIRE(cuda.kernels.size() == 1);
      const auto& kernel = cuda.kernels[0].kernel;
      CHECK(reductions_in(kernel) == 2);
      INFO(jitc::inductor::to_text(kernel));
      CHECK(kernel.num_reduction_loops == 1);
      CHECK(on_cpu.kernels[0].kernel.num_reduction_loops == 2);
      for (bool index32 : {false, true})
        CHECK_NOTHROW(jitc::inductor::cuda::nvrtc_compile(jitc::inductor::cuda_prelude() + all_variants(kernel, index32), "test", "sm_90", false));
    }
}

// The random differential test's programs (random_graphs.h) scheduled for the CUDA target print as CUDA C
// that NVRTC compiles: reductions in every arrangement the generator makes share loops where they can
// (test_cuda's "[random]" runs them on a GPU). JITC_RANDOM_SEEDS=<n> compiles more.
TEST_CASE("random graphs scheduled for the CUDA target print as CUDA C that NVRTC compiles", "[inductor][nvrtc]") {
  if (!jitc::inductor::cuda::nvrtc_available()) {
    WARN("libnvrtc not found: skipped");
    return;
  }
  using namespace jitc::testing::random_graphs;
  const auto [first, end] = seed_range(60);
  int merged = 0;
  for (uint32_t seed = first; seed < end; ++seed)
    for (auto normalizations : {Normalizations::kLastDim, Normalizations::kAnyDims}) {
      const Program program = generate(seed, normalizations);
      INFO(to_string(program));
      auto f = [&program](const std::vector<at::Tensor>& xs) { return interpret(program, xs); };
      const auto g = jitc::graph::eliminate_dead_code(jitc::testing::trace_of(f, input_data(program)).graph);
      std::string source = jitc::inductor::cuda_prelude();
      for (const auto& k : jitc::inductor::schedule(on_cuda(g), "k", {}).kernels) {
        source += jitc::inductor::emit_cuda(k.kernel, seed % 2 == 0);
        merged += reductions_in(k.kernel) > k.kernel.num_reduction_loops;
      }
      CHECK_NOTHROW(jitc::inductor::cuda::nvrtc_compile(source, "random", "sm_90", false));
    }
  CHECK(merged > 0);
}
