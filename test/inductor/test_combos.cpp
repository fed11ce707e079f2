// Combo kernels (cuda/combos.h): kernels that may run at once (independent_kernels.h) print as one CUDA
// function, each part taking its own range of blocks. Planned and compiled by NVRTC here; run on the GPU
// host ([cuda]) against eager, with updates stored in their inputs' memory.
#include "graph/passes.h"
#include "inductor/backend.h"
#include "inductor/cuda/combos.h"
#include "inductor/cuda/jit.h"
#include "inductor/independent_kernels.h"
#include "inductor/scheduler.h"
#include "support/log_capture.h"
#include "support/scoped_env.h"
#include "support/trace_of.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>

namespace {

using jitc::inductor::KernelLaunch;

struct Scheduled {
  jitc::graph::Graph graph;
  jitc::inductor::Plan plan;
  std::vector<const KernelLaunch*> kernels;
  std::vector<jitc::inductor::CudaConfig> configs;
};

template <class F, class... Args>
Scheduled scheduled(F fn, const Args&... args) {
  Scheduled s;
  s.graph = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(jitc::testing::trace_of(fn, args...).graph));
  s.plan = jitc::inductor::schedule(s.graph, "k", {});
  for (const auto& k : s.plan.kernels) {
    s.kernels.push_back(&k);
    s.configs.push_back(jitc::inductor::default_cuda_config(k.kernel));
  }
  return s;
}

// Four updates of tensors of different shapes and a row sum: five kernels, none reading another's output.
auto independent_updates = [](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, const at::Tensor& d) {
  return std::make_tuple(a * 0.9 + 1, (b * 0.5).sqrt(), c.exp() - 1, d * d + d, a.sum(-1));
};

// The same update of four tensors of different shapes (an optimizer's, per parameter): four kernels of
// one body but for their sizes.
auto same_updates = [](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, const at::Tensor& d) {
  return std::make_tuple(a * 0.9 + 1, b * 0.9 + 1, c * 0.9 + 1, d * 0.9 + 1);
};

bool have_gpu() { return at::hasCUDA() && c10::cuda::device_count() > 0; }

}  // namespace

TEST_CASE("combo kernels: independent kernels form one run, a kernel reading another's output starts a new one", "[inductor][combos]") {
  const auto a = at::randn({64, 100}), b = at::rand({7}), c = at::randn({3, 5, 9}), d = at::randn({1000});
  const Scheduled s = scheduled(independent_updates, a, b, c, d);
  REQUIRE(s.plan.kernels.size() == 5);
  const auto runs = jitc::inductor::independent_kernel_runs(s.plan, s.graph);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].size() == 5);

  // softmax's output read by the column sum: two kernels, dependent
  auto dependent = [](const at::Tensor& x) { return at::softmax(x, -1).sum(0); };
  const Scheduled chain = scheduled(dependent, a);
  REQUIRE(chain.plan.kernels.size() == 2);
  CHECK(jitc::inductor::independent_kernel_runs(chain.plan, chain.graph).empty());
}

TEST_CASE("combo kernels: parts share a block size, and print as one function that NVRTC compiles", "[inductor][combos][nvrtc]") {
  const auto a = at::randn({64, 100}), b = at::rand({7}), c = at::randn({3, 5, 9}), d = at::randn({1000});
  const Scheduled s = scheduled(independent_updates, a, b, c, d);
  const auto runs = jitc::inductor::independent_kernel_runs(s.plan, s.graph);
  const auto combos = jitc::inductor::plan_combo_kernels(s.kernels, s.configs, runs, /*index32=*/false);
  REQUIRE(!combos.empty());
  size_t parts = 0;
  for (const auto& combo : combos) {
    INFO(combo.function);
    CHECK(combo.parts.size() >= 2);
    CHECK(combo.first_block.size() == combo.parts.size() + 1);
    CHECK(std::is_sorted(combo.parts.begin(), combo.parts.end()));
    for (size_t i = 0; i < combo.parts.size(); ++i) {
      CHECK(s.configs[combo.parts[i]].threads == combo.threads);
      CHECK(combo.first_block[i + 1] - combo.first_block[i] ==
            jitc::inductor::tile_count(s.kernels[combo.parts[i]]->kernel, nullptr, s.configs[combo.parts[i]]));
    }
    CHECK(combo.function.rfind("jitc_fused_combo_", 0) == 0);
    parts += combo.parts.size();
  }
  CHECK(parts >= 4);  // the four pointwise updates at least
  for (const auto& combo : combos) {  // NVRTC compiles each body: few per combo
    const std::string text = jitc::inductor::emit_cuda_combo(combo, s.kernels, s.configs, false);
    size_t bodies = 0;
    for (size_t at = text.find(" void " + combo.function + "_f"); at != std::string::npos; at = text.find(" void " + combo.function + "_f", at + 1))
      ++bodies;
    CHECK(bodies >= 1);
    CHECK(bodies <= jitc::inductor::kMaxComboBodies);
  }
  if (!jitc::inductor::cuda::nvrtc_available()) {
    WARN("libnvrtc not found: NVRTC part skipped");
    return;
  }
  for (bool index32 : {false, true}) {
    std::string source = jitc::inductor::cuda_prelude();
    for (const auto& combo : combos) source += jitc::inductor::emit_cuda_combo(combo, s.kernels, s.configs, index32);
    std::string ptx;
    CHECK_NOTHROW(ptx = jitc::inductor::cuda::nvrtc_compile(source, "combos", "sm_90", /*cubin=*/false));
    // One entry per combo; the parts are device functions inside it.
    const std::regex entry(R"(\.entry\s+(\w+))");
    std::vector<std::string> entries;
    for (std::sregex_iterator it(ptx.begin(), ptx.end(), entry), end; it != end; ++it) entries.push_back((*it)[1]);
    CHECK(entries.size() == combos.size());
    for (const auto& combo : combos) CHECK(std::find(entries.begin(), entries.end(), combo.function) != entries.end());
  }
}

// A kernel that moves many values gains nothing from sharing a launch, and as a part would lengthen its
// combo's NVRTC compile: it launches alone while the small updates beside it still combine.
TEST_CASE("combo kernels: a kernel moving more than kMaxComboPartValues values is not a part", "[inductor][combos]") {
  const auto big = at::randn({4194304}), a = at::rand({7}), c = at::randn({135}), d = at::randn({1000});
  const Scheduled s = scheduled(same_updates, big, a, c, d);
  REQUIRE(s.plan.kernels.size() == 4);
  const auto runs = jitc::inductor::independent_kernel_runs(s.plan, s.graph);
  const auto combos = jitc::inductor::plan_combo_kernels(s.kernels, s.configs, runs, /*index32=*/false);
  std::vector<bool> part(s.kernels.size(), false);
  for (const auto& combo : combos)
    for (size_t k : combo.parts) part[k] = true;
  size_t big_kernels = 0, small_parts = 0;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const int64_t moved = jitc::inductor::values_moved(s.kernels[k]->kernel);
    INFO(s.kernels[k]->kernel.name << " moves " << moved);
    CHECK(moved > 0);
    if (moved > jitc::inductor::kMaxComboPartValues) {
      ++big_kernels;
      CHECK_FALSE(part[k]);
    } else if (part[k]) {
      ++small_parts;
    }
  }
  CHECK(big_kernels == 1);  // big * 0.9 + 1: 4M points, two buffers
  CHECK(small_parts >= 2);
}

namespace {

// One AdamW step per parameter, as torch.optim's single-tensor update writes it, in place; and each
// gradient's squared norm (a reduction per tensor).
std::vector<at::Tensor> adamw_step(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads,
                                   const std::vector<at::Tensor>& exp_avgs, const std::vector<at::Tensor>& exp_avg_sqs) {
  std::vector<at::Tensor> norms;
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].mul_(1 - 1e-3 * 1e-2);
    exp_avgs[i].lerp_(grads[i], 0.1);
    exp_avg_sqs[i].mul_(0.999).addcmul_(grads[i], grads[i], 0.001);
    params[i].addcdiv_(exp_avgs[i], (exp_avg_sqs[i].sqrt() / std::sqrt(0.001)).add_(1e-8), -1e-3 / 0.1);
    norms.push_back(grads[i].pow(2).sum());
  }
  return norms;
}

std::vector<at::Tensor> clones(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  for (const auto& t : ts) out.push_back(t.clone());
  return out;
}

}  // namespace

TEST_CASE("CUDA: combo kernels run an optimizer step over tensors of many shapes as eager does", "[cuda][combos]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  const std::vector<std::vector<int64_t>> shapes = {{64, 3, 7, 7}, {64}, {1}, {128, 64, 3, 3}, {10, 512}, {10}, {3, 5, 7}, {4097}, {2, 1}};
  auto make = [&](int seed, bool positive) {
    std::vector<at::Tensor> ts;
    at::manual_seed(seed);
    for (const auto& s : shapes) ts.push_back((positive ? at::rand(s) : at::randn(s)).to(at::kCUDA));
    return ts;
  };
  for (const bool combos_on : {true, false}) {
    INFO((combos_on ? "combo kernels" : "JITC_COMBO_KERNELS=0"));
    jitc::testing::ScopedEnv env("JITC_COMBO_KERNELS", combos_on ? "1" : "0");
    jitc::testing::LogCapture logs("schedule");
    auto params = make(1, false), grads = make(2, false), exp_avgs = make(3, false), exp_avg_sqs = make(4, true);
    auto eager_params = clones(params), eager_avgs = clones(exp_avgs), eager_sqs = clones(exp_avg_sqs);
    auto compiled = jitc::compile(adamw_step);
    for (int step = 0; step < 3; ++step) {
      const auto norms = compiled(params, grads, exp_avgs, exp_avg_sqs);
      const auto eager_norms = adamw_step(eager_params, grads, eager_avgs, eager_sqs);
      for (size_t i = 0; i < shapes.size(); ++i) {
        INFO("step " << step << " tensor " << i);
        CHECK(at::allclose(params[i], eager_params[i], 1e-5, 1e-6));
        CHECK(at::allclose(exp_avgs[i], eager_avgs[i], 1e-5, 1e-6));
        CHECK(at::allclose(exp_avg_sqs[i], eager_sqs[i], 1e-5, 1e-6));
        CHECK(at::allclose(norms[i], eager_norms[i], 1e-5, 1e-5));
      }
    }
    CHECK(compiled.stats().programs_compiled == 1);
    CHECK(logs.contains("combo kernel jitc_fused_combo_") == combos_on);
  }
}

namespace {

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The CUDA source of `kernels`, with `runs` offered for combo kernels.
std::string cuda_source(const std::vector<const KernelLaunch*>& kernels, const std::vector<std::vector<size_t>>& runs) {
  const auto* backend = jitc::inductor::backend_for(c10::DeviceType::CUDA);
  REQUIRE(backend);
  jitc::inductor::RenderOptions options;
  options.independent_runs = runs;
  return backend->render(kernels, options)->text;
}

}  // namespace

// A network's repeated layers of one shape print the same code under different names: NVRTC compiles it
// once and the later kernels launch the first's function. Combos of the same parts likewise. (Run on the
// GPU against eager: test_cuda.cpp, "repeated layers".)
TEST_CASE("CUDA kernels and combos whose code is the same but for their names are printed once", "[inductor][combos]") {
  jitc::testing::ScopedEnv env("JITC_COMBO_KERNELS", "1");
  const auto w = at::randn({64, 64}) * 0.1;
  auto layer = [](const at::Tensor& x) { return (x * 2).tanh() + 1; };
  const Scheduled layers = scheduled([=](const at::Tensor& x) { return layer(at::mm(layer(x), w)); }, at::randn({64, 64}));
  REQUIRE(layers.plan.kernels.size() == 2);
  const std::string text = cuda_source(layers.kernels, {});
  INFO(text.substr(text.size() > 4000 ? text.size() - 4000 : 0));
  CHECK(occurrences(text, "extern \"C\" __global__") == 1);
  CHECK(occurrences(text, "the same code") == 1);

  // Two updates of different shapes, rendered twice over as two runs: two combos of the same parts.
  auto updates = [](const at::Tensor& a, const at::Tensor& b) { return std::make_tuple(a * 0.9 + 1, b * 0.9 + 1); };
  const Scheduled two = scheduled(updates, at::randn({8, 8}), at::randn({16, 16}));
  REQUIRE(two.kernels.size() == 2);
  const std::vector<const KernelLaunch*> twice = {two.kernels[0], two.kernels[1], two.kernels[0], two.kernels[1]};
  const std::string combos = cuda_source(twice, {{0, 1}, {2, 3}});
  INFO(combos.substr(combos.size() > 4000 ? combos.size() - 4000 : 0));
  CHECK(occurrences(combos, "extern \"C\" __global__") == 1);
  CHECK(occurrences(combos, "the same code") == 1);
  // The two parts differ only in their sizes: one device function, out of line, reading each part's
  // constants.
  CHECK(occurrences(combos, "__device__ __noinline__ void jitc_fused_combo_") == 1);
  CHECK(occurrences(combos, "__device__ __forceinline__ void jitc_fused_combo_") == 0);
  CHECK(occurrences(combos, "_consts + ") == 2);
}

