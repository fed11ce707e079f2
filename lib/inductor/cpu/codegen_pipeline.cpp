// Pipelined rows in row kernels whose first loop sums (layer_norm, var): the first reduction loop of row
// r+1 runs inside row r's element loop, so each row is read from memory once, by a loop that also writes
// the previous row's results. Without it a row's first loop waited on memory while the later loops, which
// read the row from L1, left memory idle. Row r's first-loop results come from accumulators carried over
// from row r-1; a tile range's first row gets them from a prologue loop before the tile loop.
// The 2-core machine, [4096, 1024] floats, timed in turns in one process against the same kernels
// unpipelined (benchmarks/RESULTS.md, Fused CPU kernels, session 12): layer_norm was faster in every
// run. Softmax (a max with its NaN flag first, then exp) and RMSNorm (one reduction loop) were not
// faster, so rows need two reduction loops and a first loop without max/min to be pipelined; the rest
// keep the next-row prefetch (cpu/codegen_prefetch.cpp).
#include "inductor/cpu/printer.h"

#include <fmt/format.h>

#include <algorithm>

namespace jitc::inductor::llvm_ir {

namespace {

constexpr int64_t kMinRowElements = 256;  // shorter rows: the extra loads of a row ahead cost more than they hide
constexpr int64_t kChunkElements = 256;   // positions of the element loop between two flushes of its stores

}  // namespace

// Kernels with one outer variable, two reduction loops or more, rows of constant length and a first
// reduction loop over the element loop's variable range that reduces without a NaN flag (sums, products,
// integer max/min); not where the element loop may run twice (fast sin/cos), where a stored buffer is
// also read (row r's stores could meet row r+1's loads) or where the first loop fills the row cache (row
// r's element loop reads row r's cache while row r+1's first loop would fill it).
void Printer::plan_row_pipeline() {
  const auto outer = k_.outer_vars(), inner = k_.inner_vars();
  if (lanes_ > 0 || k_.tile > 0 || k_.num_reduction_loops < 2 || outer.size() != 1 || inner.size() != 1) return;
  const auto first = k_.loop_vars(0);
  if (first.size() != 1) return;
  const Expr& extent = k_.body[k_.vars[first[0]].extent];
  const Expr& inner_extent = k_.body[k_.vars[inner[0]].extent];
  if (extent.op != ScalarOp::kConst || inner_extent.op != ScalarOp::kConst || extent.ivalue != inner_extent.ivalue ||
      extent.ivalue < kMinRowElements)
    return;
  if (fast_trig_planned() || stores_into_a_read_buffer()) return;
  bool element_loop = false;
  std::vector<int> reductions;
  for (size_t i = 0; i < k_.body.size(); ++i) {
    const Expr& e = k_.body[i];
    element_loop = element_loop || scope_[i] == Scope::kElement;
    if (e.op != ScalarOp::kReduce || e.loop != 0) continue;
    if (e.reduce == ReduceKind::kArgMax || e.reduce == ReduceKind::kArgMin || needs_nan_flag(static_cast<int>(i))) return;
    reductions.push_back(static_cast<int>(i));
  }
  for (const auto& [key, cached] : row_cache_)
    if (std::find(reductions.begin(), reductions.end(), cached.first_pass) != reductions.end()) return;
  if (!element_loop) return;
  pipelined_ = std::move(reductions);
}

bool Printer::pipelined(int r) const { return std::find(pipelined_.begin(), pipelined_.end(), r) != pipelined_.end(); }

// In the entry block: the carried accumulators, and the prologue that fills them with the tile range's
// first row (the range is never empty: the runtime skips kernels without tiles, but the guard is cheap).
void Printer::pipeline_prologue() {
  if (pipelined_.empty()) return;
  for (int r : pipelined_) {
    const Expr& e = k_.body[r];
    const ScalarType vt = k_.body[e.a].dtype;
    line(fmt::format("%carry{} = alloca {}", r, compute_type(vt)));
  }
  reset_carried();
  line("%pipe.any = icmp slt i64 %tile_begin, %tile_end");
  line("br i1 %pipe.any, label %pipe.pro, label %pipe.go");
  label("pipe.pro");
  const int first = k_.loop_vars(0)[0];
  const std::string tag = fresh("pro").substr(1);
  const std::string position = open_loop(tag, "0", name(k_.vars[first].extent));
  accumulate_row("%tile_begin", position);
  close_loop(tag);
  line("br label %pipe.go");
  label("pipe.go");
}

void Printer::reset_carried() {
  for (int r : pipelined_) {
    const Expr& e = k_.body[r];
    const ScalarType vt = k_.body[e.a].dtype;
    line(fmt::format("store {} {}, ptr %carry{}", compute_type(vt), identity(e.reduce, vt), r));
  }
}

// In row(), at reduction r of the first loop: its result from the carried accumulator. The next row's
// index is fixed here too (the last row of the range reads itself again, a result nobody uses), and the
// accumulators restart once every first-loop result of this row is read.
void Printer::pipelined_reduction(int r) {
  line(fmt::format("{} = load {}, ptr %carry{}", name(r), compute_type(k_.body[k_.body[r].a].dtype), r));
  emitted_[r] = true;
  if (r != pipelined_.back()) return;
  reset_carried();
  const std::string after = fresh("tnext"), last = fresh("tlast"), more = fresh("tmore");
  line(fmt::format("{} = add nsw i64 %t, 1", after));
  line(fmt::format("{} = icmp slt i64 {}, %tile_end", more, after));
  line(fmt::format("{} = select i1 {}, i64 {}, i64 %t", last, more, after));
  next_row_ = last;
}

// The element loop of a pipelined row, in chunks: each chunk's staged stores stream out right after it,
// so that the next row's loads and this row's streaming stores alternate every few cache lines instead
// of the whole row's stores following the whole row's loads.
void Printer::pipelined_element_loop() {
  const std::string tag = fresh("pchunk").substr(1), extent = name(k_.vars[k_.inner_vars()[0]].extent);
  const std::string at = open_loop(tag, "0", extent);
  line(fmt::format("%{}.next = add nsw i64 {}, {}", tag, at, kChunkElements));
  line(fmt::format("%{}.over = icmp slt i64 {}, %{}.next", tag, extent, tag));
  line(fmt::format("%{}.hi = select i1 %{}.over, i64 {}, i64 %{}.next", tag, tag, extent, tag));
  element_pass(at, "%" + tag + ".hi");
  flush_staged(at, "%" + tag + ".hi");
  close_loop(tag, "%" + tag + ".next");
}

// In the element loop of the current row: the first loop's step for the next row at this position.
void Printer::accumulate_next_row() {
  if (pipelined_.empty() || next_row_.empty()) return;
  accumulate_row(next_row_, var_value_.at(k_.inner_vars()[0]));
}

// The first loop's values at row `tile` (a tile index: rows are tiles here), position `position`,
// combined into the carried accumulators. Computed in a context of their own, outside the row cache.
void Printer::accumulate_row(const std::string& tile, const std::string& position) {
  const int outer = k_.outer_vars()[0], first = k_.loop_vars(0)[0];
  const std::string row = fresh("prow");
  line(fmt::format("{} = srem i64 {}, {}", row, tile, name(k_.vars[outer].extent)));
  std::vector<int> operands;
  for (int r : pipelined_) operands.push_back(k_.body[r].a);
  const int saved_pass = std::exchange(pass_, -1);
  const std::vector<std::string> values = emit_with(operands, {{outer, row}, {first, position}});
  pass_ = saved_pass;
  for (size_t k = 0; k < pipelined_.size(); ++k) {
    const int r = pipelined_[k];
    accumulate(r, fmt::format("%carry{}", r), "", values[k]);
  }
}

}  // namespace jitc::inductor::llvm_ir
