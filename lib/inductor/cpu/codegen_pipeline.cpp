// Pipelined rows in row kernels whose first loop sums (layer_norm, var): the first reduction loop of row
// r+1 runs inside row r's element loop, so each row is read from memory once, by a loop that also writes
// the previous row's results. Without it a row's first loop waited on memory while the later loops, which
// read the row from L1, left memory idle. Row r's first-loop results come from accumulators carried over
// from row r-1; a tile range's first row gets them from a prologue loop before the tile loop.
// Which rows are pipelined, and the measurements behind the rule: cpu/schedule.cpp.
#include "inductor/cpu/printer.h"

#include <fmt/format.h>

#include <algorithm>

namespace jitc::inductor::llvm_ir {

namespace {

constexpr int64_t kChunkElements = 256;  // positions of the element loop between two flushes of its stores

}  // namespace

bool Printer::pipelined(int r) const {
  return std::find(schedule_.pipelined.begin(), schedule_.pipelined.end(), r) != schedule_.pipelined.end();
}

// In the entry block: the carried accumulators, and the prologue that fills them with the tile range's
// first row (the range is never empty: the runtime skips kernels without tiles, but the guard is cheap).
void Printer::pipeline_prologue() {
  if (schedule_.pipelined.empty()) return;
  for (int r : schedule_.pipelined) {
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
  for (int r : schedule_.pipelined) {
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
  if (r != schedule_.pipelined.back()) return;
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
  if (schedule_.pipelined.empty() || next_row_.empty()) return;
  accumulate_row(next_row_, var_value_.at(k_.inner_vars()[0]));
}

// The first loop's values at row `tile` (a tile index: rows are tiles here), position `position`,
// combined into the carried accumulators. Computed in a context of their own, outside the row cache.
void Printer::accumulate_row(const std::string& tile, const std::string& position) {
  const int outer = k_.outer_vars()[0], first = k_.loop_vars(0)[0];
  const std::string row = fresh("prow");
  line(fmt::format("{} = srem i64 {}, {}", row, tile, name(k_.vars[outer].extent)));
  std::vector<int> operands;
  for (int r : schedule_.pipelined) operands.push_back(k_.body[r].a);
  const int saved_pass = std::exchange(pass_, -1);
  const std::vector<std::string> values = emit_with(operands, {{outer, row}, {first, position}});
  pass_ = saved_pass;
  for (size_t k = 0; k < schedule_.pipelined.size(); ++k) {
    const int r = schedule_.pipelined[k];
    accumulate(r, fmt::format("%carry{}", r), "", values[k]);
  }
}

}  // namespace jitc::inductor::llvm_ir
