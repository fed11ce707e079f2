// The CPU scheduling step, one rule per strategy, in the order they are decided: a later rule reads the
// earlier ones' decisions (a pipelined row is not also prefetched). The timings behind the constants are
// in benchmarks/RESULTS.md (Fused CPU kernels); the 2-core machine is the developer host.
#include "inductor/cpu/schedule.h"

#include "inductor/cpu/llvm_emitter.h"
#include "inductor/index_analysis.h"

#include <c10/core/ScalarType.h>

#include <algorithm>
#include <bit>
#include <optional>
#include <set>
#include <string>

namespace jitc::inductor::llvm_ir {

namespace {

// ---- rows side by side ------------------------------------------------------------------------------
// A block spans CpuStrategies::block_bytes (256) of the narrowest element its reduction loops load, 8 to 128 lanes. x.sum(0) on
// a 2-core AVX-512 Xeon measured 256 bytes best: 64 float lanes clearly fastest on [4096, 1024] and level
// with 32 and 128 on [8192, 4096] (16 far slower on both), and 128 half lanes fastest on [8192, 4096].
constexpr int kMaxLanes = 128;
constexpr int kMinLanes = 8;

// Row values computed from reductions that a later reduction loop or the element loop reads (var's
// mean, softmax's 1 / sum): one array each.
std::vector<bool> kept_row_values(const Kernel& k, const Placement& p) {
  std::vector<bool> from_reduction(k.body.size(), false), kept(k.body.size(), false);
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    from_reduction[i] = e.op == ScalarOp::kReduce;
    for (int operand : {e.a, e.b, e.c}) {
      if (operand < 0) continue;
      from_reduction[i] = from_reduction[i] || from_reduction[operand];
      const bool row_value = p.scope[operand] == Scope::kRow && k.body[operand].op != ScalarOp::kStore;
      const bool in_loop = p.scope[i] == Scope::kReduction || p.scope[i] == Scope::kElement;
      if (row_value && from_reduction[operand] && in_loop) kept[operand] = true;
    }
  }
  return kept;
}

// Lane loops stay rolled where a reduction runs over several loop variables (a batch norm's statistics
// over N, H and W): O3's unroller copies every unrolled lane loop into each nest, which made one
// MobileNetV2 statistics kernel 250 ms of LLVM, and the rolled lanes vectorize as a few vector steps. A
// reduction over one long variable (x.sum(0), softmax over dim 0) keeps them unrolled: there they are
// faster (RESULTS.md, sessions 31 and 32).
bool reduces_over_nests(const Kernel& k) {
  for (int loop = 0; loop < k.num_reduction_loops; ++loop)
    if (k.loop_vars(loop).size() > 1) return true;
  return false;
}

// Reductions whose neighbouring rows are neighbours in memory and whose reduced elements are not (the
// test the CUDA backend uses too: side_by_side_row_bytes).
void plan_rows_side_by_side(const Kernel& k, const Placement& p, int block_bytes, CpuSchedule& s) {
  if (block_bytes == 0 || side_by_side_row_bytes(k) == 0) return;
  size_t narrowest = 8;
  for (size_t i = 0; i < k.body.size(); ++i) {
    if (p.scope[i] != Scope::kRow && p.scope[i] != Scope::kEntry && k.body[i].op == ScalarOp::kLoad)
      narrowest = std::min(narrowest, c10::elementSize(k.buffers[k.body[i].buffer].dtype));
  }
  int lanes = std::clamp(static_cast<int>(block_bytes / narrowest), kMinLanes, kMaxLanes);
  const Expr& extent = k.body[k.vars[k.outer_vars().back()].extent];
  const bool guarded = extent.op != ScalarOp::kConst;
  if (!guarded) {  // a narrower block for a short dim; none for a very short one
    if (extent.ivalue < kMinLanes) return;
    lanes = std::min<int>(lanes, static_cast<int>(std::bit_floor(static_cast<uint64_t>(extent.ivalue))));
  }
  s.lanes = lanes;
  s.guarded = guarded;
  s.rolled_lanes = reduces_over_nests(k);
  s.kept_row_values = kept_row_values(k, p);
}

// ---- the row cache ----------------------------------------------------------------------------------
bool expensive(ScalarOp op) {
  switch (op) {
    case ScalarOp::kExp:
    case ScalarOp::kExp2:
    case ScalarOp::kExpm1:
    case ScalarOp::kLog:
    case ScalarOp::kLog2:
    case ScalarOp::kLog10:
    case ScalarOp::kLog1p:
    case ScalarOp::kSin:
    case ScalarOp::kCos:
    case ScalarOp::kTan:
    case ScalarOp::kAsin:
    case ScalarOp::kAcos:
    case ScalarOp::kAtan:
    case ScalarOp::kSinh:
    case ScalarOp::kCosh:
    case ScalarOp::kTanh:
    case ScalarOp::kAsinh:
    case ScalarOp::kAcosh:
    case ScalarOp::kAtanh:
    case ScalarOp::kErf:
    case ScalarOp::kErfc:
    case ScalarOp::kPow:
    case ScalarOp::kAtan2: return true;
    default: return false;
  }
}

// The stack a kernel's row cache may take (a row of floats up to 16K elements: it stays in L1/L2).
constexpr int64_t kRowCacheBytes = 64 * 1024;

// Per positional key of an expensive float value, the first and last pass that compute it.
std::unordered_map<int, std::pair<int, int>> passes_by_key(const Kernel& k, const Placement& p, const std::vector<int>& keys) {
  std::unordered_map<int, std::pair<int, int>> passes;
  const int n = static_cast<int>(k.body.size());
  for (int i = 0; i < n; ++i) {
    const ScalarType t = k.body[i].dtype;
    if (!expensive(k.body[i].op) || (t != ScalarType::Float && t != ScalarType::Double)) continue;
    std::vector<int> in;  // the passes that print expression i: each reduction of its loop after it
    if (p.scope[i] == Scope::kElement) in.push_back(kElementPass);
    if (p.scope[i] == Scope::kReduction)
      for (int r = i + 1; r < n; ++r)
        if (k.body[r].op == ScalarOp::kReduce && k.body[r].loop == p.loop[i]) in.push_back(r);
    if (in.empty()) continue;
    auto [it, fresh_key] = passes.try_emplace(keys[i], in.front(), in.back());
    it->second.first = std::min(it->second.first, in.front());
    it->second.second = std::max(it->second.second, in.back());
  }
  return passes;
}

// An expensive value (exp, erf, ...) that a later loop of the row computes again at the same position
// (softmax's exp(x - max), summed by one loop and scaled by the element loop) is kept in a row-sized
// array by the first loop that computes it and loaded by the later ones. Positional keys name the same
// value at the same position of every loop when all loops of the row run over one constant shape.
void plan_row_cache(const Kernel& k, const Placement& p, CpuSchedule& s) {
  s.row_elements = constant_row_elements(k);
  if (s.lanes > 0 || s.row_elements <= 0) return;
  s.keys = IndexAnalysis(k).positional_keys();
  const auto passes = passes_by_key(k, p, s.keys);
  int64_t bytes = 0;
  for (size_t i = 0; i < k.body.size(); ++i) {
    auto it = passes.find(s.keys[i]);
    if (it == passes.end() || it->second.first == it->second.second || s.row_cache.count(s.keys[i])) continue;
    const int64_t size = s.row_elements * (k.body[i].dtype == ScalarType::Double ? 8 : 4);
    if (bytes + size > kRowCacheBytes) continue;
    bytes += size;
    const int array = static_cast<int>(s.row_cache.size());
    s.row_cache.emplace(s.keys[i], RowCacheArray{array, it->second.first, k.body[i].dtype});
  }
}

// ---- sin and cos ------------------------------------------------------------------------------------
bool stores_into_a_read_buffer(const Kernel& k) {
  std::set<int> loaded, stored;
  for (const Expr& e : k.body) {
    if (e.op == ScalarOp::kLoad) loaded.insert(e.buffer);
    if (e.op == ScalarOp::kStore) stored.insert(e.buffer);
  }
  return std::any_of(stored.begin(), stored.end(), [&](int b) { return loaded.count(b) > 0; });
}

// Float sin or cos in the element loop, and no buffer the kernel both reads and writes (a second pass
// of the element loop, taken when a lane is out of sincos_float's range, would read the first's stores).
void plan_fast_sin_cos(const Kernel& k, const Placement& p, CpuSchedule& s) {
  bool trig = false;
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    trig = trig || ((e.op == ScalarOp::kSin || e.op == ScalarOp::kCos) && e.dtype == ScalarType::Float && p.scope[i] == Scope::kElement);
  }
  s.fast_sin_cos = trig && !stores_into_a_read_buffer(k);
}

// ---- pipelined rows ---------------------------------------------------------------------------------
// [4096, 1024] floats on the 2-core machine, timed in turns in one process against the same kernels
// unpipelined (session 12): layer_norm was faster in every run; softmax (a max with its NaN flag first,
// then exp) and RMSNorm (one reduction loop) were not, so only rows with two reduction loops or more
// whose first loop reduces without a NaN flag are pipelined; the rest keep the next-row prefetch.
constexpr int64_t kMinPipelinedRow = 256;  // shorter rows: the extra loads of a row ahead cost more than they hide

// The first loop's reductions when all of them can be carried over (sums, products, integer max/min).
std::optional<std::vector<int>> carried_reductions(const Kernel& k) {
  std::vector<int> reductions;
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    if (e.op != ScalarOp::kReduce || e.loop != 0) continue;
    if (e.reduce == ReduceKind::kArgMax || e.reduce == ReduceKind::kArgMin || needs_nan_flag(k, static_cast<int>(i))) return std::nullopt;
    reductions.push_back(static_cast<int>(i));
  }
  return reductions;
}

// Kernels with one outer variable, two reduction loops or more, rows of constant length and a first
// reduction loop over the element loop's variable range; not where the element loop may run twice
// (fast sin/cos), where a stored buffer is also read (row r's stores could meet row r+1's loads) or
// where the first loop fills the row cache (row r's element loop reads row r's cache while row r+1's
// first loop would fill it).
void plan_row_pipeline(const Kernel& k, const Placement& p, bool size_limits, CpuSchedule& s) {
  const auto outer = k.outer_vars(), inner = k.inner_vars();
  if (s.lanes > 0 || k.tile > 0 || k.num_reduction_loops < 2 || outer.size() != 1 || inner.size() != 1) return;
  const auto first = k.loop_vars(0);
  if (first.size() != 1) return;
  const Expr& extent = k.body[k.vars[first[0]].extent];
  const Expr& inner_extent = k.body[k.vars[inner[0]].extent];
  if (extent.op != ScalarOp::kConst || inner_extent.op != ScalarOp::kConst || extent.ivalue != inner_extent.ivalue ||
      (size_limits && extent.ivalue < kMinPipelinedRow))
    return;
  if (s.fast_sin_cos || stores_into_a_read_buffer(k)) return;
  if (std::none_of(p.scope.begin(), p.scope.end(), [](Scope x) { return x == Scope::kElement; })) return;
  auto reductions = carried_reductions(k);
  if (!reductions) return;
  for (const auto& [key, cached] : s.row_cache)
    if (std::find(reductions->begin(), reductions->end(), cached.first_pass) != reductions->end()) return;
  s.pipelined = std::move(*reductions);
}

// ---- prefetch of the next row -----------------------------------------------------------------------
// A hand-written softmax on the 2-core machine measured faster with the next row prefetched during the
// exp loop (session 7): each 4 KB row of a [4096, 1024] float tensor starts on a new page, where the
// hardware prefetchers stop.
constexpr int64_t kMinPrefetchedRowBytes = 1024;  // shorter rows share pages, which the hardware prefetches

// The integer coefficient of variable v in index expression e when e is built of +, -, * over
// constants, symbols and variables and is affine in v with a constant coefficient; nullopt otherwise.
std::optional<int64_t> coefficient(const Kernel& k, int e, int v) {
  const Expr& x = k.body[e];
  switch (x.op) {
    case ScalarOp::kConst:
    case ScalarOp::kSym: return 0;
    case ScalarOp::kVar: return x.var == v ? 1 : 0;
    case ScalarOp::kAdd:
    case ScalarOp::kSub: {
      const auto a = coefficient(k, x.a, v), b = coefficient(k, x.b, v);
      if (!a || !b) return std::nullopt;
      return x.op == ScalarOp::kAdd ? *a + *b : *a - *b;
    }
    case ScalarOp::kMul: {
      const auto a = coefficient(k, x.a, v), b = coefficient(k, x.b, v);
      if (!a || !b) return std::nullopt;
      if (*a == 0 && *b == 0) return 0;
      if (*a != 0 && *b != 0) return std::nullopt;  // not affine in v
      const Expr& factor = k.body[*a != 0 ? x.b : x.a];
      if (factor.op != ScalarOp::kConst) return std::nullopt;
      return (*a != 0 ? *a : *b) * factor.ivalue;
    }
    default: return std::nullopt;
  }
}

// The first loop's loads that step by one element, move by a constant stride from row to row and span
// at least kMinPrefetchedRowBytes per row.
std::vector<RowPrefetch> next_row_loads(const Kernel& k, const Placement& p, int first_var, int64_t row_elements, bool size_limits) {
  const IndexAnalysis analysis(k);
  const int last_outer = k.outer_vars().back();
  std::vector<RowPrefetch> loads;
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    if (e.op != ScalarOp::kLoad || p.scope[i] != Scope::kReduction || p.loop[i] != 0) continue;
    const int64_t row_bytes = row_elements * static_cast<int64_t>(c10::elementSize(k.buffers[e.buffer].dtype));
    if (size_limits && row_bytes < kMinPrefetchedRowBytes) continue;
    if (!analysis.unit_stride(e.a, first_var)) continue;
    const auto step = coefficient(k, e.a, last_outer);
    if (!step || *step == 0 || !coefficient(k, e.a, first_var)) continue;
    const bool seen = std::any_of(loads.begin(), loads.end(), [&](const RowPrefetch& l) { return l.index == e.a && l.buffer == e.buffer; });
    if (!seen) loads.push_back({e.buffer, e.a, *step});
  }
  return loads;
}

// Row kernels that are not pipelined (pipelined rows read the next row in the element loop already),
// with at least two loops over one single-variable shape of constant length: the first loop's loads
// are prefetched while the second loop (the second reduction loop, else the element loop) runs.
void plan_row_prefetch(const Kernel& k, const Placement& p, bool size_limits, CpuSchedule& s) {
  if (k.tile > 0 || s.lanes > 0 || k.num_reduction_loops == 0 || k.outer_vars().empty() || !s.pipelined.empty()) return;
  const auto first = k.loop_vars(0);
  if (first.size() != 1) return;
  const bool element_loop = std::any_of(p.scope.begin(), p.scope.end(), [](Scope x) { return x == Scope::kElement; });
  const int loop = k.num_reduction_loops >= 2 ? 1 : element_loop ? kElementLoop : -1;
  const std::vector<int> second = loop == 1 ? k.loop_vars(1) : loop == kElementLoop ? k.inner_vars() : std::vector<int>{};
  if (second.size() != 1 || k.vars[second[0]].extent != k.vars[first[0]].extent) return;
  const Expr& extent = k.body[k.vars[first[0]].extent];
  if (extent.op != ScalarOp::kConst) return;
  s.prefetch = next_row_loads(k, p, first[0], extent.ivalue, size_limits);
  s.prefetch_row_elements = extent.ivalue;
  s.prefetch_first_var = first[0];
  if (!s.prefetch.empty()) s.prefetch_loop = loop;
}

// ---- streaming stores -------------------------------------------------------------------------------
// layer_norm and softmax over [4096, 1024] floats on the 2-core machine, bench_workloads in processes of
// their own, the same binary with and without: clearly faster with them (session 9).
constexpr int64_t kMinStagedBytes = 1024;      // shorter rows: a call per row costs more than it saves
constexpr int64_t kMaxStageBytes = 64 * 1024;  // stack for all stage arrays of a kernel

// The elements of the kernel's loop nest where its extents are constants, else -1.
int64_t static_elements(const Kernel& k) {
  int64_t elements = 1;
  for (const LoopVar& v : k.vars) {
    const Expr& extent = k.body[v.extent];
    if (extent.op != ScalarOp::kConst) return -1;
    elements *= extent.ivalue;
  }
  return elements;
}

// Stores of the element loop whose index steps by one element along its single inner variable, into a
// buffer the kernel neither reads nor stores to elsewhere (staging delays them), of a row (or tile) of
// known length between kMinStagedBytes and the stack budget; none where the kernel's sizes are known and
// it stores less than kStreamingBytes in all (it would never stream: staging would only copy its rows).
void plan_streaming_stores(const Kernel& k, const Placement& p, bool size_limits, CpuSchedule& s) {
  const auto inner = k.inner_vars();
  if (s.lanes > 0 || inner.size() != 1) return;
  const Expr& extent = k.body[k.vars[inner[0]].extent];
  int64_t elements = extent.op == ScalarOp::kConst ? extent.ivalue : 0;
  if (k.tile > 0) elements = elements > 0 ? std::min(elements, k.tile) : k.tile;
  if (elements <= 0) return;
  const IndexAnalysis analysis(k);
  auto touched_elsewhere = [&](const Expr& store) {
    return std::any_of(k.body.begin(), k.body.end(), [&](const Expr& e) {
      return e.buffer == store.buffer && (e.op == ScalarOp::kLoad || (e.op == ScalarOp::kStore && &e != &store));
    });
  };
  int64_t stack = 0;
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    if (e.op != ScalarOp::kStore || p.scope[i] != Scope::kElement || touched_elsewhere(e)) continue;
    const int64_t bytes = elements * static_cast<int64_t>(c10::elementSize(k.buffers[e.buffer].dtype));
    if ((size_limits && bytes < kMinStagedBytes) || stack + bytes > kMaxStageBytes || !analysis.unit_stride(e.a, inner[0])) continue;
    stack += bytes;
    s.staged.push_back({e.buffer, e.a, static_cast<int>(s.staged.size()), elements});
  }
  const int64_t nest = static_elements(k);
  int64_t element_bytes = 0;
  for (const StagedStore& staged : s.staged) element_bytes += static_cast<int64_t>(c10::elementSize(k.buffers[staged.buffer].dtype));
  if (size_limits && nest >= 0 && nest * element_bytes < kStreamingBytes) s.staged.clear();
}

// ---- chunked sums -----------------------------------------------------------------------------------
// A float sum whose loop runs in order adds every value into a few vector-lane accumulators: over 8M
// values each lane adds up 256K of them, and the result drifts from float64's far more than eager's
// cascade sum (benchmarks/RESULTS.md, session 23). Summed in chunks of 1024
// positions of the innermost variable, each lane adds up a few dozen values per chunk and the total one
// value per chunk. Innermost extents of at most kMaxUnchunkedRow (norms, softmax) keep the plain loop.
constexpr int64_t kMaxUnchunkedRow = 4096;

void plan_chunked_sums(const Kernel& k, CpuSchedule& s) {
  if (s.lanes > 0) return;
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    if (e.op != ScalarOp::kReduce || e.reduce != ReduceKind::kSum || !is_float(k.body[e.a].dtype)) continue;
    if (e.loop == s.prefetch_loop || std::find(s.pipelined.begin(), s.pipelined.end(), static_cast<int>(i)) != s.pipelined.end()) continue;
    const auto vars = k.loop_vars(e.loop);
    if (vars.empty()) continue;
    const Expr& extent = k.body[k.vars[vars.back()].extent];
    if (extent.op == ScalarOp::kConst && extent.ivalue <= kMaxUnchunkedRow) continue;
    s.chunked_sums.push_back(static_cast<int>(i));
  }
}

// ---- values of the inner position ------------------------------------------------------------------
// A pointwise kernel whose inner loop runs over the channels (channels-last) computes a batch norm's
// per-channel scale (a reciprocal square root) and shift for every pixel; where the loop runs over a
// row (NCHW) LLVM hoists them out of it. Computed once per call for each of at most kMaxPositions inner
// positions, the element loop loads them instead.
constexpr int64_t kMaxPositions = 4096;
constexpr int kMinPositionOps = 3;  // arithmetic ops of a value worth an array (or one expensive op)

// A division or a square root: dearer than the loads of an array, like the row cache's expensive ops.
bool dear(ScalarOp op) { return expensive(op) || op == ScalarOp::kDiv || op == ScalarOp::kSqrt || op == ScalarOp::kRsqrt; }

// Per expression: whether it depends on the innermost variable and on nothing else that changes within a
// call (loads whose index does, from buffers the kernel does not write), and its arithmetic cost.
void plan_position_values(const Kernel& k, const Placement& p, CpuSchedule& s) {
  const auto inner = k.inner_vars();
  if (k.num_reduction_loops > 0 || s.lanes > 0 || inner.size() != 1) return;
  const Expr& extent = k.body[k.vars[inner[0]].extent];
  if (extent.op != ScalarOp::kConst || extent.ivalue < 2 || extent.ivalue > kMaxPositions) return;
  int64_t rows = 1;  // a row's values are computed as often either way
  for (int v : k.outer_vars()) {
    const Expr& outer = k.body[k.vars[v].extent];
    rows = outer.op == ScalarOp::kConst ? rows * outer.ivalue : std::max<int64_t>(rows, 2);
  }
  if (rows < 2) return;
  std::vector<bool> written(k.buffers.size(), false);
  for (const Expr& e : k.body)
    if (e.op == ScalarOp::kStore) written[e.buffer] = true;
  std::vector<bool> positional(k.body.size(), false);
  std::vector<int> cost(k.body.size(), 0);
  auto fixed = [&](int e) { return e < 0 || p.scope[e] == Scope::kEntry || positional[e]; };
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    if (e.op == ScalarOp::kStore || e.op == ScalarOp::kCheck || (e.op == ScalarOp::kLoad && written[e.buffer])) continue;
    const bool reads_position = (e.op == ScalarOp::kVar && e.var == inner[0]) || (e.op != ScalarOp::kVar && p.scope[i] == Scope::kElement);
    positional[i] = reads_position && fixed(e.a) && fixed(e.b) && fixed(e.c);
    const bool arithmetic = e.op != ScalarOp::kVar && e.op != ScalarOp::kLoad && e.op != ScalarOp::kConst && e.op != ScalarOp::kSym;
    for (int operand : {e.a, e.b, e.c})
      if (operand >= 0 && positional[operand]) cost[i] = std::max(cost[i], cost[operand]);
    cost[i] += dear(e.op) ? kMinPositionOps : arithmetic ? 1 : 0;
  }
  // The positional values the rest of the element loop reads.
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    if (positional[i]) continue;
    for (int operand : {e.a, e.b, e.c}) {
      if (operand < 0 || !positional[operand] || cost[operand] < kMinPositionOps || !is_float(k.body[operand].dtype)) continue;
      if (std::find(s.position_values.begin(), s.position_values.end(), operand) == s.position_values.end())
        s.position_values.push_back(operand);
    }
  }
  std::sort(s.position_values.begin(), s.position_values.end());
  if (!s.position_values.empty()) s.positions = extent.ivalue;
}

}  // namespace

bool needs_nan_flag(const Kernel& k, int r) {
  const Expr& e = k.body[r];
  return is_float(k.body[e.a].dtype) && (e.reduce == ReduceKind::kMax || e.reduce == ReduceKind::kMin);
}

CpuSchedule schedule_cpu_kernel(const Kernel& kernel, const Placement& placement, const CpuStrategies& use) {
  CpuSchedule s;
  plan_rows_side_by_side(kernel, placement, use.block_bytes, s);
  if (use.row_cache) plan_row_cache(kernel, placement, s);
  plan_fast_sin_cos(kernel, placement, s);
  if (use.pipelined_rows) plan_row_pipeline(kernel, placement, use.size_limits, s);
  if (use.prefetch) plan_row_prefetch(kernel, placement, use.size_limits, s);
  if (use.streaming_stores) plan_streaming_stores(kernel, placement, use.size_limits, s);
  plan_chunked_sums(kernel, s);
  if (use.position_values) plan_position_values(kernel, placement, s);
  return s;
}

std::vector<CpuSchedule> cpu_schedule_candidates(const Kernel& kernel, const Placement& placement) {
  const CpuStrategies heuristic;
  std::vector<CpuStrategies> variants(9, heuristic);
  variants[1].block_bytes = heuristic.block_bytes / 2;
  variants[2].block_bytes = heuristic.block_bytes * 2;
  variants[3].row_cache = false;
  variants[4].pipelined_rows = false;
  variants[5].prefetch = false;
  variants[6].streaming_stores = false;
  variants[7].size_limits = false;
  variants[8].position_values = false;
  std::vector<CpuSchedule> candidates;
  std::set<std::string> seen;
  for (const CpuStrategies& use : variants) {
    CpuSchedule s = schedule_cpu_kernel(kernel, placement, use);
    if (seen.insert(s.decisions(kernel).text()).second) candidates.push_back(std::move(s));
  }
  return candidates;
}

Schedule CpuSchedule::decisions(const Kernel& kernel) const {
  Schedule s;
  s.set("tile", kernel.tile)
      .set("rows_side_by_side", lanes)
      .set("row_cache_arrays", static_cast<int64_t>(row_cache.size()))
      .set("pipelined_reductions", static_cast<int64_t>(pipelined.size()))
      .set("prefetched_loads", static_cast<int64_t>(prefetch.size()))
      .set("streamed_stores", static_cast<int64_t>(staged.size()))
      .set("fast_sin_cos", fast_sin_cos ? 1 : 0)
      .set("chunked_sums", static_cast<int64_t>(chunked_sums.size()))
      .set("position_values", static_cast<int64_t>(position_values.size()));
  return s;
}

}  // namespace jitc::inductor::llvm_ir
