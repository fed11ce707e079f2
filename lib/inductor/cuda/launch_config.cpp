// Launch configurations of CUDA kernels: the heuristic's choice, max-autotune's candidates, and the
// size arithmetic the launcher evaluates (tiles per launch).
#include "inductor/cuda/codegen.h"

#include <jitc/detail/internal_assert.h>

#include "inductor/index_analysis.h"

#include <c10/core/ScalarType.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace jitc::inductor {

int column_width(const Kernel& k) {
  const size_t narrowest = side_by_side_row_bytes(k);
  return narrowest == 0 ? 0 : static_cast<int>(std::clamp<size_t>(64 / narrowest, 8, 32));
}

int64_t constant_elements(const Kernel& k, const std::vector<int>& vars) {
  int64_t n = 1;
  for (int v : vars) {
    const Expr& extent = k.body[k.vars[v].extent];
    if (extent.op != ScalarOp::kConst) return -1;
    n *= extent.ivalue;
  }
  return n;
}

namespace {

int reduction_count(const Kernel& k) {
  return static_cast<int>(std::count_if(k.body.begin(), k.body.end(), [](const Expr& e) { return e.op == ScalarOp::kReduce; }));
}

// Whether a reduction reads another's result (var's second loop reads the mean): then the slices of a
// row cannot be reduced independently, unless the pair is a variance that Welford's update computes.
bool reductions_independent(const Kernel& k) {
  const std::map<int, int> variances = welford_pairs(k);
  std::vector<bool> uses_reduction(k.body.size(), false);
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    for (int operand : {e.a, e.b, e.c})
      if (operand >= 0) uses_reduction[i] = uses_reduction[i] || uses_reduction[operand] || k.body[operand].op == ScalarOp::kReduce;
    if (e.op == ScalarOp::kReduce && uses_reduction[i] && !variances.count(static_cast<int>(i))) return false;
  }
  return true;
}

constexpr int64_t kSplitBlocks = 1024;  // enough to fill a GPU of 132 SMs several times over

bool is_sum(const Kernel& k, int e) { return k.body[e].op == ScalarOp::kReduce && k.body[e].reduce == ReduceKind::kSum; }

// Size expressions are compared at two sets of symbol values: they are polynomials of small degree in
// the symbols (products of sizes), so two such points tell them apart in practice.
constexpr std::array<int64_t, 16> kProbeA{3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59};
constexpr std::array<int64_t, 16> kProbeB{101, 89, 83, 79, 73, 71, 67, 61, 97, 103, 107, 109, 113, 127, 131, 137};

// An int64 expression of constants and symbols (of the 16 a launch passes), + - *: evaluate_size's domain.
bool is_size_expression(const Kernel& k, int e) {
  const Expr& x = k.body[e];
  if (!c10::isIntegralType(x.dtype, false)) return false;
  switch (x.op) {
    case ScalarOp::kConst: return true;
    case ScalarOp::kSym: return x.var < static_cast<int>(kProbeA.size());
    case ScalarOp::kAdd:
    case ScalarOp::kSub:
    case ScalarOp::kMul: return is_size_expression(k, x.a) && is_size_expression(k, x.b);
    default: return false;
  }
}

bool same_size(const Kernel& k, int a, int b) {
  if (!is_size_expression(k, a) || !is_size_expression(k, b)) return false;
  for (const auto* probe : {&kProbeA, &kProbeB})
    if (evaluate_size(k, a, probe->data()) != evaluate_size(k, b, probe->data())) return false;
  return true;
}

// The product of vars' extents at these symbol values.
int64_t elements_at(const Kernel& k, const std::vector<int>& vars, const int64_t* symbols) {
  int64_t n = 1;
  for (int v : vars) n *= evaluate_size(k, k.vars[v].extent, symbols);
  return n;
}

// Whether `divisor` is the number of elements of vars' loop: a constant, or the float of that size
// expression (a mean over a dim of symbolic size).
bool divides_by_count(const Kernel& k, int divisor, const std::vector<int>& vars) {
  const Expr& d = k.body[divisor];
  if (d.op == ScalarOp::kConst) {
    const int64_t n = constant_elements(k, vars);
    return n > 0 && d.value == static_cast<double>(n);
  }
  if (d.op != ScalarOp::kCast || !is_size_expression(k, d.a)) return false;
  for (const auto* probe : {&kProbeA, &kProbeB})
    if (evaluate_size(k, d.a, probe->data()) != elements_at(k, vars, probe->data())) return false;
  return true;
}

}  // namespace

std::map<int, int> welford_pairs(const Kernel& k) {
  std::map<int, int> pairs;
  const IndexAnalysis analysis(k);
  const auto& keys = analysis.positional_keys();
  for (size_t r = 0; r < k.body.size(); ++r) {
    if (!is_sum(k, static_cast<int>(r))) continue;
    const Expr& square = k.body[k.body[r].a];
    if (square.op != ScalarOp::kMul || square.a != square.b || k.body[square.a].op != ScalarOp::kSub) continue;
    const Expr& deviation = k.body[square.a];
    const Expr& mean = k.body[deviation.b];
    if (mean.op != ScalarOp::kDiv || !is_sum(k, mean.a)) continue;
    const Expr& sum = k.body[mean.a];
    const auto vars = k.loop_vars(sum.loop), square_vars = k.loop_vars(k.body[r].loop);
    bool same_shape = vars.size() == square_vars.size();
    for (size_t d = 0; same_shape && d < vars.size(); ++d) same_shape = same_size(k, k.vars[vars[d]].extent, k.vars[square_vars[d]].extent);
    const bool floating = sum.dtype == c10::ScalarType::Float || sum.dtype == c10::ScalarType::Double;
    if (same_shape && floating && sum.loop != k.body[r].loop && divides_by_count(k, mean.b, vars) && keys[deviation.a] == keys[sum.a] &&
        k.body[r].dtype == sum.dtype)
      pairs[static_cast<int>(r)] = mean.a;
  }
  return pairs;
}

namespace {

bool has_arg_reduction(const Kernel& k) {
  return std::any_of(k.body.begin(), k.body.end(), [](const Expr& e) {
    return e.op == ScalarOp::kReduce && (e.reduce == ReduceKind::kArgMax || e.reduce == ReduceKind::kArgMin);
  });
}

// Column kernels split over blocks (rows side by side, each block a slice of their reduced elements):
// 1024 blocks of 256 threads, each reading 128 bytes of a row per step. On the H100, x.sum(0) of 8192x4096
// floats (prof colsum microbenchmark) measured 32 columns of 256 threads in 8 slices level with 64 columns
// of 512 threads and faster than unsplit 16 columns of 1024 threads; 16-byte loads of 4 columns per thread
// gained little more (benchmarks/RESULTS.md, session 7). Slices keep 16 positions or more per thread.
int column_split_count(const Kernel& k, int64_t rows, int64_t elements) {
  // The column printer has no Welford or arg-reduce partials.
  if (!welford_pairs(k).empty() || has_arg_reduction(k)) return 0;
  const int columns = column_split_width(k);
  const int64_t groups = (rows + columns - 1) / columns, threads_per_row = kColumnSplitThreads / columns;
  const int64_t split = std::min(kSplitBlocks / groups, elements / (16 * threads_per_row));
  return split >= 2 ? static_cast<int>(split) : 0;
}

// A reduction loop's element count for choosing a split: its size, or for a loop of symbolic size its
// size with every symbol at kSplitSizeHint. The split count is a constant of the code and the slices'
// bounds follow the size at run time, so every count gives the same result; one chosen for a larger size
// than the run's costs blocks with little to do, one chosen for a smaller size leaves a long reduction to
// a few blocks (a batch norm's statistics over a dynamic batch, one block per channel). Hence a large
// nominal size: a dynamic batch or length of 1024.
constexpr int64_t kSplitSizeHint = 1024;
int64_t elements_for_split(const Kernel& k, const std::vector<int>& vars) {
  const int64_t n = constant_elements(k, vars);
  if (n > 0) return n;
  for (int v : vars)
    if (!is_size_expression(k, k.vars[v].extent)) return -1;
  std::array<int64_t, kProbeA.size()> hint;
  hint.fill(kSplitSizeHint);
  return elements_at(k, vars, hint.data());
}

}  // namespace

int column_split_width(const Kernel& k) { return std::min(64, 2 * column_width(k)); }

int split_count(const Kernel& k) {
  if (k.tile > 0 || k.num_reduction_loops == 0 || !k.inner_vars().empty() || !reductions_independent(k)) return 0;
  const int64_t rows = constant_elements(k, k.outer_vars());
  int64_t elements = -1;  // of the shortest reduction loop
  for (int loop = 0; loop < k.num_reduction_loops; ++loop) {
    const int64_t n = elements_for_split(k, k.loop_vars(loop));
    // A slice may be empty at a symbolic size: an arg reduction's empty slice would offer a position.
    if (n <= 0 || (constant_elements(k, k.loop_vars(loop)) < 0 && has_arg_reduction(k))) return 0;
    elements = loop == 0 ? n : std::min(elements, n);
  }
  if (rows <= 0 || elements <= 0) return 0;
  if (column_width(k) > 0) return column_split_count(k, rows, elements);
  // On the H100, (x*x).mean() of 8192x4096 measured 512 and 1024 blocks level and 4096 slower
  // (benchmarks/RESULTS.md).
  constexpr int64_t kMinSlice = 8192;  // elements per block: 16 per thread of 512, worth a second kernel
  const int64_t split = std::min(kSplitBlocks / rows, elements / kMinSlice);
  return split >= 2 ? static_cast<int>(split) : 0;
}

int64_t split_workspace_slots(const Kernel& k, const CudaConfig& config) {
  return 2 * reduction_count(k) * std::max<int64_t>(1, constant_elements(k, k.outer_vars())) * config.split;
}

Schedule cuda_schedule(const CudaConfig& config) {
  Schedule s;
  return s.set("threads", config.threads).set("tile", config.tile).set("columns", config.columns).set("split", config.split);
}

CudaConfig default_cuda_config(const Kernel& kernel) {
  if (const int split = split_count(kernel))
    return column_width(kernel) > 0 ? CudaConfig{kColumnSplitThreads, 0, column_split_width(kernel), split} : CudaConfig{512, 0, 0, split};
  // max-autotune's H100 timings of x.sum(0) on 8192x4096 floats put 1024 threads over 16 rows first,
  // ahead of 512 and 256 threads and of 8 rows per block (benchmarks/RESULTS.md, session 4).
  if (const int columns = column_width(kernel)) return {1024, 0, columns};
  const int64_t elements = constant_row_elements(kernel);
  if (kernel.tile > 0) {
    // 128 threads over 1024-element tiles: 2-byte elements' groups by max-autotune's timings on the H100
    // (session 5), 4-byte ones' since a thread loads both its groups at once (groups_per_thread): hand-edited
    // kernels of [4096, 4096] floats, (sin+cos).relu slightly faster than with 512 threads over 4096
    // (tanh-GELU, x + 1: level). benchmarks/RESULTS.md, sessions 5 and 11.
    return CudaConfig{128, std::min<int64_t>(1024, kernel.tile)};
  }
  if (kernel.num_reduction_loops == 0) return {256};
  if (elements <= 0) return {512};  // rows looped over: dynamic or uneven shapes
  // About 8 positions per thread: enough loads in flight per thread, few idle threads on short rows.
  int threads = 32;
  while (threads < kCudaMaxThreads && threads * 8 < elements) threads *= 2;
  return {threads};
}

std::vector<CudaConfig> cuda_config_candidates(const Kernel& kernel) {
  const CudaConfig chosen = default_cuda_config(kernel);
  // Pointwise: smaller tiles give more blocks (a shorter last wave), larger blocks fewer.
  if (kernel.tile > 0) {
    std::vector<CudaConfig> out{chosen};
    for (CudaConfig c : {CudaConfig{128, 1024}, CudaConfig{256, 2048}, CudaConfig{512, kernel.tile}, CudaConfig{256, kernel.tile}})
      if ((c.threads != chosen.threads || c.tile != chosen.tile) && out.size() < 4 && kernel.tile % c.tile == 0) out.push_back(c);
    return out;
  }
  std::vector<CudaConfig> out{chosen};
  if (chosen.split > 0) return out;  // two kernels per configuration: the heuristic's only
  // Reductions over outer dims: more or fewer threads per row, or twice the rows side by side.
  if (chosen.columns > 0) {
    const int narrower = std::max(8, chosen.columns / 2);
    for (CudaConfig c : {CudaConfig{512, 0, chosen.columns}, CudaConfig{1024, 0, narrower}, CudaConfig{512, 0, narrower}})
      if (std::none_of(out.begin(), out.end(), [&](const CudaConfig& o) { return o.threads == c.threads && o.columns == c.columns; }))
        out.push_back(c);
    return out;
  }
  for (int threads : {chosen.threads / 2, chosen.threads * 2, chosen.threads * 4})
    if (threads >= 32 && threads <= kCudaMaxThreads && out.size() < 3) out.push_back({threads});
  return out;
}

int64_t evaluate_size(const Kernel& k, int e, const int64_t* symbols) {
  const Expr& x = k.body[e];
  switch (x.op) {
    case ScalarOp::kConst: return x.ivalue;
    case ScalarOp::kSym: return symbols[x.var];
    case ScalarOp::kAdd: return evaluate_size(k, x.a, symbols) + evaluate_size(k, x.b, symbols);
    case ScalarOp::kSub: return evaluate_size(k, x.a, symbols) - evaluate_size(k, x.b, symbols);
    case ScalarOp::kMul: return evaluate_size(k, x.a, symbols) * evaluate_size(k, x.b, symbols);
    default: JITC_INTERNAL_UNREACHABLE(fmt::format("a size expression uses {}", op_name(x.op)));
  }
}

TileFormula tile_formula(const Kernel& k, const CudaConfig& config) {
  TileFormula f;
  for (int v : k.outer_vars()) f.outer_extents.push_back(k.vars[v].extent);
  f.columns = config.columns;
  f.split = config.split;
  const int64_t tile = k.tile > 0 && config.tile > 0 ? config.tile : k.tile;
  if (config.split == 0 && config.columns == 0 && tile > 0) {
    f.tile = tile;
    f.inner_extent = k.vars[k.inner_vars().at(0)].extent;
  }
  return f;
}

int64_t evaluate_tiles(const Kernel& k, const TileFormula& f, const int64_t* symbols) {
  int64_t tiles = 1;
  for (int e : f.outer_extents) tiles *= evaluate_size(k, e, symbols);
  if (f.columns > 0) tiles = (tiles + f.columns - 1) / f.columns;
  if (f.split > 0) return tiles * f.split;
  if (f.tile > 0) tiles *= (evaluate_size(k, f.inner_extent, symbols) + f.tile - 1) / f.tile;
  return tiles;
}

int64_t tile_count(const Kernel& k, const int64_t* symbols, const CudaConfig& config) {
  return evaluate_tiles(k, tile_formula(k, config), symbols);
}

}  // namespace jitc::inductor
