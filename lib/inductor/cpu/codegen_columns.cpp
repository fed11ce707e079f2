// Rows side by side: reductions over outer dims on the CPU. In x.sum(0) over a contiguous [N, C] a row
// is a column j; one row at a time, its reduction loop steps C elements per iteration: one element per
// cache line read, and nothing vectorizes. When neighbouring rows are neighbours in memory and the
// reduced elements are not (side_by_side_row_bytes, the test the CUDA backend uses too; cpu/schedule.cpp decides), a
// tile takes a block of `lanes_` consecutive values of the last outer var instead, and every loop of the
// row runs the block's lanes innermost:
//
//   for each reduction:  for i: for lane: acc[lane] = combine(acc[lane], value(i, first + lane))
//   then:                for lane: store the row's results
//
// so each step of i reads whole cache lines and the lane loop vectorizes across rows (LLVM keeps a
// block's accumulators in vector registers). Each lane accumulates its row in order; float sums and
// products go through chunks (chunked_sum) to round about as the row path's vectorized loop does.
// Accumulators and the row values a later reduction loop reads (var's mean) live in per-lane arrays;
// other row values (indices) are computed again inside each lane loop. A block never crosses the end of
// the last outer dim: the last block of a dim starts lanes_ before its end (overlapping the previous
// one) and stores only the lanes the previous block did not. A normalization over outer dims (softmax
// over dim 0) has an element loop as well: it runs after the reductions, the lanes innermost again.
#include "inductor/cpu/printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace jitc::inductor::llvm_ir {

namespace {

constexpr int kChunk = 64;  // steps of a float sum between two additions into the total

// Rolled lane loops (CpuSchedule::rolled_lanes) carry this loop id: one for every lane loop of a module
// (LLVM allows loops to share one, as inlined copies do).
constexpr const char* kLaneLoopId = "!1000";
constexpr const char* kLaneLoopMetadata[] = {"!1000 = distinct !{!1000, !1001}", "!1001 = !{!\"llvm.loop.unroll.disable\"}"};

const char* array_type(const char* type) { return std::string_view(type) == "i1" ? "i8" : type; }

}  // namespace

// i1: does the block fit the last outer dim (symbolic extents only).
std::string Printer::columns_guard() {
  const std::string extent = emit(k_.vars[k_.outer_vars().back()].extent), wide = fresh("wide");
  line(fmt::format("{} = icmp sge i64 {}, {}", wide, extent, schedule_.lanes));
  return wide;
}

// Tiles: the other outer extents times the blocks of the last one.
std::string Printer::column_tiles() {
  const auto outer = k_.outer_vars();
  std::string rows = "1";
  for (size_t d = 0; d + 1 < outer.size(); ++d) {
    const std::string product = fresh("rows");
    line(fmt::format("{} = mul i64 {}, {}", product, rows, emit(k_.vars[outer[d]].extent)));
    rows = product;
  }
  const std::string extent = emit(k_.vars[outer.back()].extent);
  const std::string bumped = fresh("ext"), blocks = fresh("blocks"), total = fresh("tiles");
  line(fmt::format("{} = add i64 {}, {}", bumped, extent, schedule_.lanes - 1));
  line(fmt::format("{} = sdiv i64 {}, {}", blocks, bumped, schedule_.lanes));
  line(fmt::format("{} = mul i64 {}, {}", total, rows, blocks));
  return total;
}

// In the entry block: per reduction its accumulators, per kept row value its array.
void Printer::column_allocas() {
  for (size_t i = 0; i < k_.body.size(); ++i) {
    const Expr& e = k_.body[i];
    if (e.op == ScalarOp::kReduce) {
      line(fmt::format("%cacc{} = alloca [{} x {}], align 64", i, schedule_.lanes, array_type(compute_type(k_.body[e.a].dtype))));
      if (e.reduce == ReduceKind::kArgMax || e.reduce == ReduceKind::kArgMin)
        line(fmt::format("%cpos{} = alloca [{} x i64], align 64", i, schedule_.lanes));
      if (chunked_sum(e)) {
        line(fmt::format("%cpart{} = alloca [{} x {}], align 64", i, schedule_.lanes, compute_type(k_.body[e.a].dtype)));
        line(fmt::format("%ccount{} = alloca i64", i));
      }
    } else if (schedule_.kept_row_values[i]) {
      line(fmt::format("%lane{} = alloca [{} x {}], align 64", i, schedule_.lanes, array_type(compute_type(e.dtype))));
    }
  }
}

// One tile: a block of lanes_ rows along the last outer var, at fixed values of the other outer vars.
void Printer::column_row() {
  const auto outer = k_.outer_vars();
  const std::string extent = name(k_.vars[outer.back()].extent);
  const std::string bumped = fresh("ext"), blocks = fresh("blocks"), block = fresh("block");
  line(fmt::format("{} = add i64 {}, {}", bumped, extent, schedule_.lanes - 1));
  line(fmt::format("{} = sdiv i64 {}, {}", blocks, bumped, schedule_.lanes));
  line(fmt::format("{} = srem i64 %t, {}", block, blocks));
  std::string rest = fresh("q");
  line(fmt::format("{} = sdiv i64 %t, {}", rest, blocks));
  for (size_t d = outer.size() - 1; d-- > 0;) {  // the other outer dims, the last of them fastest
    const std::string other = name(k_.vars[outer[d]].extent);
    var_value_[outer[d]] = fresh("o");
    line(fmt::format("{} = srem i64 {}, {}", var_value_[outer[d]], rest, other));
    const std::string next = fresh("q");
    line(fmt::format("{} = sdiv i64 {}, {}", next, rest, other));
    rest = next;
  }
  // The last block of the dim moves back to end at the dim's end; its first `skip` lanes are the
  // previous block's to store.
  const std::string wanted = fresh("first"), back = fresh("back"), over = fresh("over"), skip = fresh("skip");
  first_column_ = fresh("c0");
  line(fmt::format("{} = mul i64 {}, {}", wanted, block, schedule_.lanes));
  line(fmt::format("{} = sub i64 {}, {}", back, extent, schedule_.lanes));
  line(fmt::format("{} = icmp sgt i64 {}, {}", over, wanted, back));
  line(fmt::format("{} = select i1 {}, i64 {}, i64 {}", first_column_, over, back, wanted));
  line(fmt::format("{} = sub i64 {}, {}", skip, wanted, first_column_));
  for (size_t i = 0; i < k_.body.size(); ++i)
    if (k_.body[i].op == ScalarOp::kReduce) column_reduction(static_cast<int>(i));
  column_elements(skip);
  lane_loop(skip, [&](const std::string&) {
    for (size_t i = 0; i < k_.body.size(); ++i)
      if (scope_[i] == Scope::kRow && (k_.body[i].op == ScalarOp::kStore || k_.body[i].op == ScalarOp::kCheck)) emit(static_cast<int>(i));
  });
}

// The element loop nest, each step over the block's lanes from `skip` (a plain map: it vectorizes).
void Printer::column_elements(const std::string& skip) {
  if (std::none_of(scope_.begin(), scope_.end(), [](Scope s) { return s == Scope::kElement; })) return;
  loop_nest(k_.inner_vars(), "", "", [&] {
    lane_loop(skip, [&](const std::string&) {
      for (size_t i = 0; i < k_.body.size(); ++i)
        if (scope_[i] == Scope::kElement) emit(static_cast<int>(i));
    });
  });
}

void Printer::lane_loop(const std::string& lo, const std::function<void(const std::string& lane)>& body) {
  auto saved = emitted_;
  const std::string saved_suffix = suffix_;
  const std::string tag = fresh("lane").substr(1);
  suffix_ = "." + tag;  // names unique to this loop
  for (size_t i = 0; i < k_.body.size(); ++i) emitted_[i] = scope_[i] == Scope::kEntry;
  const std::string lane = open_loop(tag, lo, std::to_string(schedule_.lanes)), column = "%" + tag + ".c";
  line(fmt::format("{} = add nsw i64 {}, {}", column, first_column_, lane));
  var_value_[k_.outer_vars().back()] = column;
  lane_ = lane;
  body(lane);
  if (schedule_.rolled_lanes)
    for (const char* definition : kLaneLoopMetadata) metadata(definition);
  close_loop(tag, "", schedule_.rolled_lanes ? kLaneLoopId : "");
  emitted_ = std::move(saved);
  suffix_ = saved_suffix;
}

// A reduction for every lane of the block: identities, the loop nest with the lanes innermost. Its result
// is then read from the accumulator array (positions for argmax/argmin).
void Printer::column_reduction(int r) {
  const Expr& e = k_.body[r];
  const ScalarType vt = k_.body[e.a].dtype;
  const char* ty = compute_type(vt);
  const bool arg = e.reduce == ReduceKind::kArgMax || e.reduce == ReduceKind::kArgMin;
  const bool chunked = chunked_sum(e);
  const std::string acc = fmt::format("%cacc{}", r), pos = fmt::format("%cpos{}", r), part = fmt::format("%cpart{}", r);
  lane_loop("0", [&](const std::string& lane) {
    store_lane(lane_slot(acc, ty, lane), ty, identity(e.reduce, vt));
    if (arg) store_lane(lane_slot(pos, "i64", lane), "i64", "0");
    if (chunked) store_lane(lane_slot(part, ty, lane), ty, identity(e.reduce, vt));
  });
  if (chunked) line(fmt::format("store i64 0, ptr %ccount{}", r));
  loop_nest(k_.loop_vars(e.loop), "", "", [&] {
    lane_loop("0", [&](const std::string& lane) {
      for (int i = 0; i < r; ++i)
        if (scope_[i] == Scope::kReduction && loop_of_[i] == e.loop) emit(i);
      column_accumulate(r, lane);
    });
    if (chunked) flush_chunk(r, true);
  });
  if (chunked) flush_chunk(r, false);
  lane_array_[r] = arg ? pos : acc;
  lane_type_[r] = arg ? "i64" : ty;
  materialize_after(r);
}

// Float sums and products add kChunk steps into a partial accumulator, then the partial into the total.
// With a single accumulator per lane a long reduction would round like a sequential sum (x.sum(0) over
// 8192 rows: 1.2e-3 off eager), while the row path's vectorized loop keeps a partial sum per vector lane;
// chunks bring the error back to the same order (1.5e-4; the row path 9e-5).
bool Printer::chunked_sum(const Expr& e) const {
  return is_float(k_.body[e.a].dtype) && (e.reduce == ReduceKind::kSum || e.reduce == ReduceKind::kProd);
}

// acc[lane] = combine(acc[lane], part[lane]), part[lane] = identity: every kChunk steps (`counted`, at
// the end of a step of the loop nest), or once after the loop.
void Printer::flush_chunk(int r, bool counted) {
  const Expr& e = k_.body[r];
  const ScalarType vt = k_.body[e.a].dtype;
  const char* ty = compute_type(vt);
  const std::string tag = fresh("chunk").substr(1);
  if (counted) {
    line(fmt::format("%{}.c = load i64, ptr %ccount{}", tag, r));
    line(fmt::format("%{}.n = add nsw i64 %{}.c, 1", tag, tag));
    line(fmt::format("%{}.full = icmp eq i64 %{}.n, {}", tag, tag, kChunk));
    line(fmt::format("%{}.k = select i1 %{}.full, i64 0, i64 %{}.n", tag, tag, tag));
    line(fmt::format("store i64 %{}.k, ptr %ccount{}", tag, r));
    line(fmt::format("br i1 %{}.full, label %{}.flush, label %{}.done", tag, tag, tag));
    label(tag + ".flush");
  }
  lane_loop("0", [&](const std::string& lane) {
    const std::string total = lane_slot(fmt::format("%cacc{}", r), ty, lane), part = lane_slot(fmt::format("%cpart{}", r), ty, lane);
    const std::string t = fresh("total"), p = fresh("part");
    line(fmt::format("{} = load {}, ptr {}", t, ty, total));
    line(fmt::format("{} = load {}, ptr {}", p, ty, part));
    store_lane(total, ty, combine(e.reduce, vt, t, p));
    if (counted) store_lane(part, ty, identity(e.reduce, vt));
  });
  if (counted) {
    line(fmt::format("br label %{}.done", tag));
    label(tag + ".done");
  }
}

// acc[lane] = combine(acc[lane], value). No loop-carried value: the lane loop is a plain map over the
// lanes, so max/min propagate NaN by selects (a first NaN sticks) without the row path's NaN flag, and
// argmax/argmin keep the first of equal values by a strict comparison.
void Printer::column_accumulate(int r, const std::string& lane) {
  const Expr& e = k_.body[r];
  const ScalarType vt = k_.body[e.a].dtype;
  const char* ty = compute_type(vt);
  const std::string slot = lane_slot(fmt::format("%{}{}", chunked_sum(e) ? "cpart" : "cacc", r), ty, lane);
  const std::string old = fresh("old");
  load_slot(old, slot, ty);
  const std::string v = emit(e.a);
  if (e.reduce != ReduceKind::kArgMax && e.reduce != ReduceKind::kArgMin) {
    store_lane(slot, ty, combine(e.reduce, vt, old, v));
    return;
  }
  const std::string take = better(e.reduce == ReduceKind::kArgMax, vt, v, old);
  const std::string nv = fresh("nv"), np = fresh("np"), op = fresh("op");
  const std::string pos = lane_slot(fmt::format("%cpos{}", r), "i64", lane);
  line(fmt::format("{} = select i1 {}, {} {}, {} {}", nv, take, ty, v, ty, old));
  line(fmt::format("{} = load i64, ptr {}", op, pos));
  line(fmt::format("{} = select i1 {}, i64 {}, i64 {}", np, take, emit(e.b), op));
  store_lane(slot, ty, nv);
  store_lane(pos, "i64", np);
}

// The row values after reduction r (and before the next) that a later reduction loop reads: computed
// once per lane into their arrays, so that the loop reads them instead of recomputing them per element.
void Printer::materialize_after(int r) {
  std::vector<int> kept;
  for (size_t j = r + 1; j < k_.body.size() && k_.body[j].op != ScalarOp::kReduce; ++j)
    if (schedule_.kept_row_values[j]) kept.push_back(static_cast<int>(j));
  if (kept.empty()) return;
  lane_loop("0", [&](const std::string& lane) {
    for (int j : kept) {
      const char* ty = compute_type(k_.body[j].dtype);
      store_lane(lane_slot(fmt::format("%lane{}", j), ty, lane), ty, emit(j));
    }
  });
  for (int j : kept) {
    lane_array_[j] = fmt::format("%lane{}", j);
    lane_type_[j] = compute_type(k_.body[j].dtype);
  }
}

std::string Printer::lane_slot(const std::string& array, const char* type, const std::string& lane) {
  const std::string p = fresh("slot");
  line(fmt::format("{} = getelementptr {}, ptr {}, i64 {}", p, array_type(type), array, lane));
  return p;
}

// name(e) := e's value for the current lane, from its array.
void Printer::load_lane(int e) { load_slot(name(e), lane_slot(lane_array_[e], lane_type_[e], lane_), lane_type_[e]); }

// Arrays keep bools as bytes: an array of i1 would be packed bits in memory, which the vectorizer
// refuses to load as vectors.
void Printer::load_slot(const std::string& v, const std::string& slot, const char* type) {
  if (std::string_view(type) != "i1") {
    line(fmt::format("{} = load {}, ptr {}", v, type, slot));
    return;
  }
  line(fmt::format("{}.b = load i8, ptr {}", v, slot));
  line(fmt::format("{} = icmp ne i8 {}.b, 0", v, v));
}

void Printer::store_lane(const std::string& slot, const char* type, const std::string& value) {
  if (std::string_view(type) != "i1") {
    line(fmt::format("store {} {}, ptr {}", type, value, slot));
    return;
  }
  const std::string byte = fresh("byte");
  line(fmt::format("{} = zext i1 {} to i8", byte, value));
  line(fmt::format("store i8 {}, ptr {}", byte, slot));
}

}  // namespace jitc::inductor::llvm_ir
