// Golden kernel IR and LLVM IR for canonical graphs: a change in lowering, fusion or code generation
// shows up as a diff in test/inductor/golden/. JITC_UPDATE_GOLDEN=1 rewrites the files.
#include "graph/passes.h"
#include "inductor/cpu/codegen.h"
#include "inductor/scheduler.h"
#include "inductor/cpu/jit.h"
#include "support/trace_of.h"

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace {

// The kernels the scheduler makes for fn's trace.
template <class F, class... T>
std::vector<jitc::inductor::KernelLaunch> kernels_of(F fn, const T&... args) {
  auto outcome = jitc::testing::trace_of(fn, args...);
  const auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(outcome.graph));
  return jitc::inductor::schedule(g, jitc::inductor::kKernelPrefix, {}).kernels;
}

// Kernel IR and LLVM IR of each kernel.
std::string text_of(const std::vector<jitc::inductor::KernelLaunch>& kernels) {
  std::string text;
  for (const auto& k : kernels) text += jitc::inductor::to_text(k.kernel) + "\n" + jitc::inductor::emit_llvm_ir(k.kernel) + "\n";
  return text;
}

void check_golden(const std::string& name, const std::string& text) {
  // The folder comes from CMake: __FILE__ is relative where ccache rewrites paths (base_dir).
  const auto path = std::filesystem::path(JITC_GOLDEN_DIR) / (name + ".txt");
  const char* update = std::getenv("JITC_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path) << text;
    WARN("rewrote " << path.string());
    return;
  }
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream want;
  want << in.rdbuf();
  INFO("golden file " << path.string() << " (JITC_UPDATE_GOLDEN=1 rewrites it)");
  CHECK(text == want.str());
}

}  // namespace

TEST_CASE("golden: a pointwise chain over a broadcast and a transposed input", "[inductor][golden]") {
  auto fn = [](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) { return at::relu(a * b.t() + c); };
  const auto kernels = kernels_of(fn, at::randn({8, 64}), at::randn({64, 8}), at::randn({64}));
  check_golden("pointwise_chain", text_of(kernels));
  // The inner loop vectorizes: the optimized IR works on vectors of floats.
  REQUIRE(kernels.size() == 1);
  auto module = jitc::inductor::cpu::compile_cpu_module(jitc::inductor::emit_llvm_ir(kernels[0].kernel), "golden");
  CHECK(module->optimized_ir().find(" x float>") != std::string::npos);
}

TEST_CASE("golden: softmax", "[inductor][golden]") {
  check_golden("softmax", text_of(kernels_of([](const at::Tensor& x) { return at::softmax(x, -1); }, at::randn({4, 32}))));
}

TEST_CASE("softmax computes exp once per element: the element loop reads it from the row cache", "[inductor][cpu]") {
  const auto kernels = kernels_of([](const at::Tensor& x) { return at::softmax(x, -1); }, at::randn({4, 32}));
  REQUIRE(kernels.size() == 1);
  const std::string ir = jitc::inductor::emit_llvm_ir(kernels[0].kernel);
  INFO(ir);
  CHECK(ir.find("%rowcache0 = alloca float, i64 32") != std::string::npos);
  size_t exps = 0;  // exp_float rounds x * log2(e) once per exp it prints, into its temporary <name>.x.tm
  for (size_t at = ir.find(".x.tm = fadd float"); at != std::string::npos; at = ir.find(".x.tm = fadd float", at + 1)) ++exps;
  CHECK(exps == 1);
}

// Rows of 4 KB: the second loop runs in chunks of 256 positions, each first prefetching the next row's
// (16 cache lines), and still vectorizes. Rows of 128 bytes (the golden softmax) take no prefetches.
TEST_CASE("row kernels prefetch the next row during their second loop", "[inductor][cpu]") {
  // An argmax first loop keeps the row from being pipelined (cpu/codegen_pipeline.cpp): it prefetches.
  auto softmax = [](const at::Tensor& x) { return x * x.argmax(-1, true); };
  const auto long_rows = kernels_of(softmax, at::randn({4, 1024})), short_rows = kernels_of(softmax, at::randn({4, 32}));
  REQUIRE(long_rows.size() == 1);
  const std::string ir = jitc::inductor::emit_llvm_ir(long_rows[0].kernel);
  INFO(ir);
  size_t prefetches = 0;
  for (size_t at = ir.find("call void @llvm.prefetch"); at != std::string::npos; at = ir.find("call void @llvm.prefetch", at + 1))
    ++prefetches;
  CHECK(prefetches == 16);
  CHECK(ir.find("chunk.") != std::string::npos);
  auto module = jitc::inductor::cpu::compile_cpu_module(ir, "prefetch");
  CHECK(module->optimized_ir().find(" x float>") != std::string::npos);
  CHECK(jitc::inductor::emit_llvm_ir(short_rows.at(0).kernel).find("@llvm.prefetch") == std::string::npos);
}

// Long rows are pipelined: the first loop of row r+1 runs inside row r's element loop (in chunks, each
// chunk's staged stores flushed after it), row r's first-loop results come from carried accumulators,
// and nothing is prefetched. The element loop still vectorizes. Short rows are not pipelined.
TEST_CASE("row kernels run the next row's first loop inside the element loop", "[inductor][cpu]") {
  auto layer_norm = [](const at::Tensor& x) { return at::layer_norm(x, {x.size(-1)}); };
  const auto long_rows = kernels_of(layer_norm, at::randn({2048, 1024})), short_rows = kernels_of(layer_norm, at::randn({4, 32}));
  REQUIRE(long_rows.size() == 1);
  const std::string ir = jitc::inductor::emit_llvm_ir(long_rows[0].kernel);
  INFO(ir);
  CHECK(ir.find("%carry") != std::string::npos);
  CHECK(ir.find("pipe.pro") != std::string::npos);
  CHECK(ir.find("pchunk") != std::string::npos);
  CHECK(ir.find("@llvm.prefetch") == std::string::npos);
  auto module = jitc::inductor::cpu::compile_cpu_module(ir, "pipelined");
  CHECK(module->optimized_ir().find(" x float>") != std::string::npos);
  CHECK(jitc::inductor::emit_llvm_ir(short_rows.at(0).kernel).find("%carry") == std::string::npos);
}

// Rows of 4 KB leave through a stage array and @<kernel>.stream, whose 64-byte stores are non-temporal when
// the kernel stores 8 MiB or more (here a constant: O3 keeps them for 2048 rows, drops them for 4); the
// element loop still vectorizes. Rows of 128 bytes store straight to the output.
TEST_CASE("row kernels stage long output rows for streaming stores", "[inductor][cpu]") {
  auto softmax = [](const at::Tensor& x) { return at::softmax(x, -1); };
  const auto long_rows = kernels_of(softmax, at::randn({2048, 1024})), short_rows = kernels_of(softmax, at::randn({4, 32}));
  const auto few_rows = kernels_of(softmax, at::randn({4, 1024}));
  REQUIRE(long_rows.size() == 1);
  const std::string ir = jitc::inductor::emit_llvm_ir(long_rows[0].kernel);
  INFO(ir);
  CHECK(ir.find("%stage0 = alloca float, i64 1024, align 64") != std::string::npos);
  CHECK(ir.find(".stream(ptr %sdst") != std::string::npos);
  CHECK(ir.find("store <16 x float> %line, ptr %to, align 64, !nontemporal") != std::string::npos);
  CHECK(ir.find("fence seq_cst") != std::string::npos);
  auto module = jitc::inductor::cpu::compile_cpu_module(ir, "streaming");
  CHECK(module->optimized_ir().find("store <16 x float>") != std::string::npos);
  CHECK(module->optimized_ir().find("!nontemporal") != std::string::npos);
  CHECK(jitc::inductor::emit_llvm_ir(short_rows.at(0).kernel).find(".stream(") == std::string::npos);
  auto small = jitc::inductor::cpu::compile_cpu_module(jitc::inductor::emit_llvm_ir(few_rows.at(0).kernel), "small");
  CHECK(small->optimized_ir().find("!nontemporal") == std::string::npos);
}

// sin and cos of one value share one reduction (one rint) in the element loop, which vectorizes; a second
// pass, guarded per element (libm's sin and cos past the range), runs only for a tile whose flag a lane
// raised, and shares its reduction too.
TEST_CASE("sin and cos of one value share a reduction and redo a tile through libm past its range", "[inductor][cpu]") {
  auto chain = [](const at::Tensor& x) { return (x.sin() + x.cos()).relu(); };
  const auto kernels = kernels_of(chain, at::randn({64, 1024}));
  REQUIRE(kernels.size() == 1);
  const std::string ir = jitc::inductor::emit_llvm_ir(kernels[0].kernel);
  INFO(ir);
  const auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = ir.find(what); at != std::string::npos; at = ir.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("call float @llvm.rint.f32(") == 2);  // one per pass
  CHECK(count("= alloca i1") == 1);                 // the tile's flag
  CHECK(count("call float @jitc.vm.sinf(") == 1);   // the second pass only (libm through vector_math.h's wrapper)
  CHECK(count("call float @jitc.vm.cosf(") == 1);
  auto module = jitc::inductor::cpu::compile_cpu_module(ir, "sincos");
  // Vectorized at the host's width: 16 floats with AVX-512, 8 with AVX2.
  CHECK(std::regex_search(module->optimized_ir(), std::regex(R"(@llvm\.fma\.v(8|16)f32)")));
}

namespace {

// The extent of a kernel's inner dim, and the product of its outer extents (constants in these tests).
std::pair<int64_t, int64_t> inner_and_rows(const jitc::inductor::Kernel& k) {
  int64_t rows = 1;
  for (int v : k.outer_vars()) rows *= k.body[k.vars[v].extent].ivalue;
  return {k.body[k.vars[k.inner_vars().at(0)].extent].ivalue, rows};
}

}  // namespace

TEST_CASE("pointwise kernels run contiguous dims as one inner dim", "[inductor][cpu]") {
  const auto x = at::randn({2, 3, 5, 6}), w = at::randn({3}), b = at::randn({3}), m = at::randn({3}), v = at::rand({3}) + 0.5;
  auto bn_relu = [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& m, const at::Tensor& v) {
    return at::relu(at::batch_norm(x, w, b, m, v, false, 0.1, 1e-5, true));
  };
  // Per-channel parameters: h and w merge (30 elements per row), n and c stay rows.
  auto kernels = kernels_of(bn_relu, x, w, b, m, v);
  REQUIRE(kernels.size() == 1);
  CHECK(inner_and_rows(kernels[0].kernel) == std::pair<int64_t, int64_t>{30, 6});
  // Every dim contiguous: one row of 180.
  kernels = kernels_of([](const at::Tensor& x) { return x.sin() * 2; }, x);
  CHECK(inner_and_rows(kernels[0].kernel) == std::pair<int64_t, int64_t>{180, 1});
  // A transposed operand reads h and w out of order: nothing merges.
  kernels = kernels_of([](const at::Tensor& x, const at::Tensor& y) { return x + y.transpose(2, 3); }, x, at::randn({2, 3, 6, 5}));
  CHECK(inner_and_rows(kernels[0].kernel).first == 6);
}

// loop_order.cpp: a kernel's loops follow the memory order of what it stores, innermost the stride-1 dim.
TEST_CASE("pointwise kernels loop in the order their output is stored", "[inductor][cpu]") {
  const auto x = at::randn({2, 3, 5, 6}).contiguous(at::MemoryFormat::ChannelsLast);
  // A channels-last output [2, 3, 5, 6] is stored as [2, 5, 6, 3]: c innermost, and then every dim merges.
  auto kernels = kernels_of([](const at::Tensor& x) { return x.relu() + 1; }, x);
  REQUIRE(kernels.size() == 1);
  CHECK(inner_and_rows(kernels[0].kernel) == std::pair<int64_t, int64_t>{180, 1});
  // Per-channel parameters keep c apart from w: rows of the 3 channels, one per pixel.
  const auto w = at::randn({3}), b = at::randn({3}), m = at::randn({3}), v = at::rand({3}) + 0.5;
  kernels = kernels_of([](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& m,
                          const at::Tensor& v) { return at::relu(at::batch_norm(x, w, b, m, v, false, 0.1, 1e-5, true)); },
                       x, w, b, m, v);
  CHECK(inner_and_rows(kernels[0].kernel) == std::pair<int64_t, int64_t>{3, 60});
  // A permuted input's layout carries over to the output: the loops follow it.
  kernels = kernels_of([](const at::Tensor& y) { return y * 2; }, at::randn({4, 5, 6}).permute({2, 0, 1}));
  CHECK(inner_and_rows(kernels[0].kernel) == std::pair<int64_t, int64_t>{120, 1});
  // An output stored in logical order keeps its loops, whatever its inputs' layouts: the last two dims,
  // contiguous in both, merge; the first stays the rows.
  kernels =
      kernels_of([](const at::Tensor& y) { return y.clone(at::MemoryFormat::Contiguous) * 2; }, at::randn({4, 5, 6}).permute({2, 0, 1}));
  REQUIRE(kernels.size() == 1);
  CHECK(inner_and_rows(kernels[0].kernel) == std::pair<int64_t, int64_t>{20, 6});
}

TEST_CASE("golden: layer_norm", "[inductor][golden]") {
  auto fn = [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) { return at::layer_norm(x, {32}, w, b); };
  check_golden("layer_norm", text_of(kernels_of(fn, at::randn({4, 32}), at::randn({32}), at::randn({32}))));
}

TEST_CASE("golden: row sum of squares", "[inductor][golden]") {
  check_golden("row_sum_of_squares", text_of(kernels_of([](const at::Tensor& x) { return (x * x).sum(-1); }, at::randn({4, 32}))));
}

TEST_CASE("golden: var over the outer dim takes rows side by side", "[inductor][golden]") {
  // 96 columns: a block of 64 and a last block moved back over the first; the mean is kept per lane for
  // the second loop.
  const auto kernels = kernels_of([](const at::Tensor& x) { return x.var(0); }, at::randn({16, 96}));
  check_golden("column_var", text_of(kernels));
  REQUIRE(kernels.size() == 1);
  auto module = jitc::inductor::cpu::compile_cpu_module(jitc::inductor::emit_llvm_ir(kernels[0].kernel), "golden");
  // The lane loops vectorize across the block's rows: whole vectors of a step's columns are loaded.
  INFO(module->optimized_ir());
  CHECK(std::regex_search(module->optimized_ir(), std::regex("load <[0-9]+ x float>, ptr")));
}
