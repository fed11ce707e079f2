// The backend contract (inductor/backend.h): the registry, each backend's capabilities, and the null
// backend, which schedules and renders the kernels of meta tensors as CUDA C without hardware: the whole
// pipeline (trace, schedule, render, compile, load, launch, cache payload) runs in CI without a GPU.
// (Ops whose meta kernels LibTorch registers only from Python, var and batch_norm among them, raise on
// meta tensors in eager C++ as well: the graphs here avoid them.)
#include "graph/passes.h"
#include "inductor/backend.h"
#include "inductor/scheduler.h"
#include "runtime/program.h"
#include "support/log_capture.h"
#include "support/trace_of.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>

namespace {

std::vector<std::string> names_of(const std::vector<const jitc::inductor::Backend*>& backends) {
  std::vector<std::string> names;
  for (const auto* b : backends) names.push_back(b->target().name);
  return names;
}

const jitc::inductor::Backend& null_backend() { return *jitc::inductor::backend_named("null"); }

// The kernels of a graph traced on meta tensors, scheduled and built through the backends.
std::shared_ptr<const jitc::runtime::ProgramCode> meta_code(jitc::graph::Graph& g) {
  return jitc::runtime::ProgramCode::compile(jitc::inductor::schedule(g, "meta", {}), "meta", false, true);
}

}  // namespace

TEST_CASE("backends: one registry line each, found by device type and by name", "[backends]") {
  using jitc::inductor::backend_for;
  CHECK(names_of(jitc::inductor::backends()) == std::vector<std::string>{"cpu", "cuda", "null"});
  REQUIRE(backend_for(c10::DeviceType::CPU) != nullptr);
  REQUIRE(backend_for(c10::DeviceType::CUDA) != nullptr);
  CHECK(backend_for(c10::DeviceType::CPU)->target().name == "cpu");
  CHECK(backend_for(c10::DeviceType::CUDA)->target().name == "cuda");
  CHECK(backend_for(c10::DeviceType::Meta) == &null_backend());
  CHECK(backend_for(c10::DeviceType::XPU) == nullptr);
  CHECK(jitc::inductor::backend_named("rocm") == nullptr);
}

TEST_CASE("backends: capabilities are data the scheduler and executor read", "[backends]") {
  const auto& cpu = jitc::inductor::backend_for(c10::DeviceType::CPU)->target();
  const auto& cuda = jitc::inductor::backend_for(c10::DeviceType::CUDA)->target();
  CHECK(cuda.buffer_alignment == 16);  // vector groups move 16 bytes at once
  CHECK(cpu.buffer_alignment == 1);
  CHECK(cpu.reuses_released_buffers);
  CHECK_FALSE(cuda.reuses_released_buffers);  // the caching allocator reuses them, stream-ordered
  CHECK(cuda.nvtx_ranges);
  CHECK(cpu.normalization_row_kernels);
  CHECK_FALSE(cuda.normalization_row_kernels);
}

TEST_CASE("null backend: meta tensors' kernels are scheduled and rendered as CUDA C", "[backends]") {
  auto f = [](const at::Tensor& x, const at::Tensor& w) { return at::softmax(x * w + 1, -1).sum(0) + x.amax(1).mean(); };
  const at::Tensor x = at::empty({64, 512}, at::device(at::kMeta)), w = at::empty({512}, at::device(at::kMeta));
  auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(jitc::testing::trace_of(f, x, w).graph));
  const auto code = meta_code(g);
  REQUIRE(code->plan.kernels.size() >= 2);
  REQUIRE(code->units.size() == 1);
  const auto& unit = code->units[0];
  CHECK(unit.backend == &null_backend());
  CHECK(unit.source_file == "kernels.cu");
  for (const auto& launch : code->plan.kernels) {
    CHECK(launch.device.is_meta());
    CHECK(unit.source.find(") " + launch.kernel.name + "(Buffers_" + launch.kernel.name + " buffers") != std::string::npos);
  }
  // The payload round trip: the unit comes back through its backend's name.
  const auto reloaded = jitc::runtime::ProgramCode::deserialize(code->serialize(), "meta");
  REQUIRE(reloaded);
  REQUIRE(reloaded->units.size() == 1);
  CHECK(reloaded->units[0].backend == &null_backend());
  CHECK(reloaded->units[0].source == unit.source);
  CHECK(reloaded->plan.kernels.size() == code->plan.kernels.size());
}

TEST_CASE("null backend: a compiled function of meta tensors gives eager's shapes and dtypes", "[backends]") {
  auto f = [](const at::Tensor& x, const at::Tensor& y) {
    return std::make_tuple((x + y).exp().to(at::kHalf), at::softmax(x, -1) * 2, x.amax(0, true));
  };
  jitc::testing::LogCapture logs("output_code");
  auto compiled = jitc::compile(f);
  for (int64_t rows : {8, 8, 24}) {
    const at::Tensor x = at::empty({rows, 96}, at::device(at::kMeta)), y = at::empty({96}, at::device(at::kMeta));
    const auto [a, b, c] = compiled(x, y);
    const auto [ea, eb, ec] = f(x, y);
    for (const auto& [got, want] : {std::pair{a, ea}, std::pair{b, eb}, std::pair{c, ec}}) {
      CHECK(got.is_meta());
      CHECK(got.sizes() == want.sizes());
      CHECK(got.strides() == want.strides());
      CHECK(got.scalar_type() == want.scalar_type());
    }
  }
  CHECK(compiled.stats().kernels_compiled > 0);
  CHECK(logs.contains("extern \"C\" __global__ void __launch_bounds__("));
}

TEST_CASE("null backend: a malformed binary is refused, not loaded", "[backends]") {
  CHECK(null_backend().deserialize("") != nullptr);
  CHECK(null_backend().deserialize("7 garbage") == nullptr);
}

namespace {

// Each kernel's schedule as `backend` renders the kernels of f traced on `args` (no compiler needed).
template <class F, class... Args>
std::vector<jitc::inductor::Schedule> rendered_schedules(const jitc::inductor::Backend& backend, F f, const Args&... args) {
  auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(jitc::testing::trace_of(f, args...).graph));
  const auto plan = jitc::inductor::schedule(g, "sched", {});
  std::vector<const jitc::inductor::KernelLaunch*> kernels;
  for (const auto& k : plan.kernels) kernels.push_back(&k);
  return backend.render(kernels, {.name = "sched"})->schedules;
}

at::Tensor meta(at::IntArrayRef sizes) { return at::empty(sizes, at::device(at::kMeta)); }

}  // namespace

TEST_CASE("schedules: the CUDA heuristics' choices, read without a GPU through the null backend", "[backends]") {
  const auto& null = null_backend();
  // Rows of one long row each: split over blocks. Columns (a reduction over the outer dim): rows side by side.
  const auto whole = rendered_schedules(null, [](const at::Tensor& x) { return (x * x).sum(); }, meta({8192, 4096}));
  REQUIRE(whole.size() == 1);
  CHECK(whole[0].get("split") > 1);
  const auto columns = rendered_schedules(null, [](const at::Tensor& x) { return x.sum(0); }, meta({8192, 4096}));
  REQUIRE(columns.size() == 1);
  CHECK(columns[0].get("columns") > 0);
  const auto rows = rendered_schedules(null, [](const at::Tensor& x) { return at::softmax(x, -1); }, meta({512, 4096}));
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].get("threads") >= 32);
  CHECK(rows[0].get("columns") == 0);
  CHECK(rows[0].get("split") == 0);
  CHECK(rows[0].text().find("threads ") == 0);
}

TEST_CASE("schedules: the CPU printer's decisions, as data", "[backends]") {
  const auto& cpu = *jitc::inductor::backend_for(c10::DeviceType::CPU);
  const auto norm = rendered_schedules(cpu, [](const at::Tensor& x) { return at::layer_norm(x, {x.size(-1)}); }, at::randn({64, 4096}));
  REQUIRE(norm.size() == 1);
  CHECK(norm[0].get("pipelined_reductions") > 0);  // its first loop runs inside the previous row's element loop
  CHECK(norm[0].get("rows_side_by_side") == 0);
  const auto softmax = rendered_schedules(cpu, [](const at::Tensor& x) { return at::softmax(x, -1); }, at::randn({64, 4096}));
  REQUIRE(softmax.size() == 1);
  CHECK(softmax[0].get("prefetched_loads") > 0);
  CHECK(softmax[0].get("row_cache_arrays") > 0);  // exp(x - max), summed and then scaled
  const auto columns = rendered_schedules(cpu, [](const at::Tensor& x) { return x.sum(0); }, at::randn({4096, 512}));
  REQUIRE(columns.size() == 1);
  CHECK(columns[0].get("rows_side_by_side") > 0);
  const auto pointwise = rendered_schedules(cpu, [](const at::Tensor& x) { return x.sin() + 1; }, at::randn({64, 4096}));
  REQUIRE(pointwise.size() == 1);
  CHECK(pointwise[0].get("tile") > 0);
}

TEST_CASE("schedules: JITC_LOGS=schedule prints each kernel's, and the cached code keeps them", "[backends]") {
  jitc::testing::LogCapture logs("schedule");
  auto f = jitc::compile([](const at::Tensor& x) { return x.sum(0) + 1; });
  f(meta({4096, 512}));
  f(meta({4096, 512}));
  CHECK(logs.contains("(null schedule): threads "));
  CHECK(logs.contains(", columns "));
  auto column_sums = [](const at::Tensor& x) { return x.sum(0); };
  auto g = jitc::graph::eliminate_common_subexpressions(
      jitc::graph::eliminate_dead_code(jitc::testing::trace_of(column_sums, meta({4096, 512})).graph));
  const auto code = meta_code(g);
  const auto reloaded = jitc::runtime::ProgramCode::deserialize(code->serialize(), "meta");
  REQUIRE(reloaded);
  CHECK(reloaded->units[0].binary->schedules[0].decisions == code->units[0].binary->schedules[0].decisions);
  CHECK(code->units[0].binary->schedules[0].get("columns") > 0);
}
