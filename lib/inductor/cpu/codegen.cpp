// Kernel IR -> LLVM IR text. Loop counters and reduction accumulators live in allocas (as clang emits
// them); O3's mem2reg turns them into SSA, after which the inner loops vectorize. Each kernel gives:
//   void  @<name>(ptr buffers, ptr symbols, i64 tile_begin, i64 tile_end)
//   i64   @<name>.tiles(ptr symbols)       the number of tiles (rows, or row x column tiles)
// The body is a private function taking each buffer as a `noalias` pointer: outputs are fresh
// allocations, so no store can alias a load, and the vectorizer needs no runtime alias checks.
// Reductions over outer dims (x.sum(0)) take blocks of rows side by side instead: @<name>.columns, see
// cpu/codegen_columns.cpp; where the block width depends on a symbol's value, the wrapper picks one of
// the two bodies at run time.
#include "inductor/cpu/codegen.h"

#include <jitc/detail/internal_assert.h>

#include "inductor/cpu/printer.h"
#include "inductor/index_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace jitc::inductor {

namespace llvm_ir {

Printer::Printer(const Kernel& k, const Placement& placement, const CpuSchedule& schedule)
    : k_(k),
      schedule_(schedule),
      checks_(has_checks(k)),
      scope_(placement.scope),
      loop_of_(placement.loop),
      emitted_(k.body.size()),
      lane_array_(k.body.size()),
      lane_type_(k.body.size(), nullptr) {}

std::string Printer::run() {
  if (!schedule_.staged.empty()) declare_stream_copy();
  std::string bodies;
  if (schedule_.lanes == 0 || schedule_.guarded) bodies += body_function(false);
  if (schedule_.lanes > 0) bodies += body_function(true);
  return declarations_ + bodies + wrapper() + tiles_function();
}

// ---- functions ----------------------------------------------------------------------------------
namespace {
// Vectors up to 512 bits: LLVM's default preference for several AVX-512 CPUs (Skylake-X, Ice Lake) is 256
// bits, which halves the width of every loop there; on AVX2 hosts it changes nothing (256 is the widest).
constexpr const char* kVectorWidth = "\"prefer-vector-width\"=\"512\"";
}  // namespace

// @<name>.body takes a row per tile, @<name>.columns a block of rows side by side.
std::string Printer::body_function(bool columns) {
  const std::string function = k_.name + (columns ? ".columns" : ".body");
  std::fill(emitted_.begin(), emitted_.end(), false);
  std::string params;
  for (size_t b = 0; b < k_.buffers.size(); ++b) params += fmt::format("ptr noalias %buf{}, ", b);
  if (checks_) params += "ptr %status, ";
  out_ += fmt::format("define internal void @{}({}ptr %syms, i64 %tile_begin, i64 %tile_end) alwaysinline {} {{\n", function, params,
                      kVectorWidth);
  label("entry");
  if (checks_) {  // a failed check sets the flag (an `or` reduction: loops still vectorize)
    line("%checkflag = alloca i1");
    line("store i1 false, ptr %checkflag");
  }
  for (size_t i = 0; i < k_.body.size(); ++i)
    if (scope_[i] == Scope::kEntry) emit(static_cast<int>(i));
  // here: an alloca inside the tile loop would take stack per tile
  if (columns) {
    column_allocas();
  } else {
    row_cache_allocas();
    stage_allocas();
    pipeline_prologue();
    fill_position_values();
  }
  tiles_per_row_ = tiles_per_row();
  line("%tile = alloca i64");
  line("store i64 %tile_begin, ptr %tile");
  line("br label %tile.head");
  label("tile.head");
  line("%t = load i64, ptr %tile");
  line("%t.more = icmp slt i64 %t, %tile_end");
  line("br i1 %t.more, label %tile.body, label %exit");
  label("tile.body");
  if (columns) column_row();
  else row();
  line("%t.next = add nsw i64 %t, 1");
  line("store i64 %t.next, ptr %tile");
  line(fmt::format("br label %tile.head, !llvm.loop {}", loop_id()));
  label("exit");
  if (!columns) fence_streaming_stores();
  if (checks_) report_failed_checks();
  line("ret void");
  out_ += "}\n";
  return std::exchange(out_, "");
}

std::string Printer::wrapper() {
  std::fill(emitted_.begin(), emitted_.end(), false);
  out_ += fmt::format("define void @{}(ptr %buffers, ptr %syms, i64 %tile_begin, i64 %tile_end) {} {{\n", k_.name, kVectorWidth);
  label("entry");
  std::string args;
  for (size_t b = 0; b < k_.buffers.size(); ++b) {
    line(fmt::format("%slot{} = getelementptr ptr, ptr %buffers, i64 {}", b, b));
    line(fmt::format("%buf{} = load ptr, ptr %slot{}", b, b));
    args += fmt::format("ptr %buf{}, ", b);
  }
  if (checks_) {  // the status word follows the buffers
    line(fmt::format("%slot.status = getelementptr ptr, ptr %buffers, i64 {}", k_.buffers.size()));
    line("%status = load ptr, ptr %slot.status");
    args += "ptr %status, ";
  }
  auto call = [&](const char* body) {
    line(fmt::format("call void @{}.{}({}ptr %syms, i64 %tile_begin, i64 %tile_end)", k_.name, body, args));
    line("ret void");
  };
  if (schedule_.lanes > 0 && schedule_.guarded) {
    line(fmt::format("br i1 {}, label %columns, label %rows", columns_guard()));
    label("columns");
    call("columns");
    label("rows");
  }
  call(schedule_.lanes > 0 && !schedule_.guarded ? "columns" : "body");
  out_ += "}\n";
  return std::exchange(out_, "");
}

std::string Printer::tiles_function() {
  std::fill(emitted_.begin(), emitted_.end(), false);
  out_ += fmt::format("define i64 @{}.tiles(ptr %syms) {{\n", k_.name);
  label("entry");
  std::string total;
  if (schedule_.lanes == 0 || schedule_.guarded) {
    const std::string rows = row_count();
    const std::string per_row = tiles_per_row();
    total = fresh("tiles");
    line(fmt::format("{} = mul i64 {}, {}", total, rows, per_row));
  }
  if (schedule_.lanes > 0) {
    const std::string blocks = column_tiles();
    if (schedule_.guarded) {
      const std::string either = fresh("tiles");
      line(fmt::format("{} = select i1 {}, i64 {}, i64 {}", either, columns_guard(), blocks, total));
      total = either;
    } else {
      total = blocks;
    }
  }
  line(fmt::format("ret i64 {}", total));
  out_ += "}\n";
  return std::exchange(out_, "");
}

// The product of the outer extents.
std::string Printer::row_count() {
  std::string rows = "1";
  for (int v : k_.outer_vars()) {
    const std::string extent = emit(k_.vars[v].extent);
    const std::string product = fresh("rows");
    line(fmt::format("{} = mul i64 {}, {}", product, rows, extent));
    rows = product;
  }
  return rows;
}

// Tiles per row: 1, or ceil(inner extent / tile) for a tiled pointwise kernel.
std::string Printer::tiles_per_row() {
  if (k_.tile == 0) return "1";
  const auto inner = k_.inner_vars();
  JITC_INTERNAL_ASSERT(inner.size() == 1, "cpu codegen: a tiled kernel needs exactly one inner dim");
  const std::string extent = emit(k_.vars[inner[0]].extent);
  const std::string bumped = fresh("ext"), count = fresh("tpr");
  line(fmt::format("{} = add i64 {}, {}", bumped, extent, k_.tile - 1));
  line(fmt::format("{} = sdiv i64 {}, {}", count, bumped, k_.tile));
  return count;
}

// ---- one tile: outer coordinates, reductions, row values, the element loop ----------------------
void Printer::row() {
  std::string rest = "%t";
  std::string column_tile = "0";
  if (k_.tile > 0) {
    rest = fresh("row");
    column_tile = fresh("ctile");
    line(fmt::format("{} = sdiv i64 %t, {}", rest, tiles_per_row_));
    line(fmt::format("{} = srem i64 %t, {}", column_tile, tiles_per_row_));
  }
  const auto outer = k_.outer_vars();
  for (size_t d = outer.size(); d-- > 0;) {  // the last outer dim varies fastest
    const std::string extent = name(k_.vars[outer[d]].extent);
    var_value_[outer[d]] = fresh("o");
    line(fmt::format("{} = srem i64 {}, {}", var_value_[outer[d]], rest, extent));
    const std::string next = fresh("q");
    line(fmt::format("{} = sdiv i64 {}, {}", next, rest, extent));
    rest = next;
  }
  next_row_.clear();
  for (size_t i = 0; i < k_.body.size(); ++i) {
    if (scope_[i] == Scope::kRow) emit(static_cast<int>(i));
    else if (k_.body[i].op == ScalarOp::kReduce && pipelined(static_cast<int>(i))) pipelined_reduction(static_cast<int>(i));
    else if (k_.body[i].op == ScalarOp::kReduce) reduction(static_cast<int>(i));
  }
  element_loop(column_tile);
}

// A loop nest over `vars`; the innermost is bounded by [lo, hi) when given. Calls body() inside.
void Printer::loop_nest(const std::vector<int>& vars, const std::string& lo, const std::string& hi, const std::function<void()>& body) {
  std::vector<std::string> tails;
  for (size_t d = 0; d < vars.size(); ++d) {
    const bool innermost = d + 1 == vars.size();
    const std::string tag = fresh("l").substr(1);
    const std::string bound = innermost && !hi.empty() ? hi : name(k_.vars[vars[d]].extent);
    var_value_[vars[d]] = open_loop(tag, innermost && !lo.empty() ? lo : "0", bound);
    tails.push_back(tag);
  }
  body();
  for (size_t d = tails.size(); d-- > 0;) close_loop(tails[d]);
}

// A counted loop in allocas: %<tag>.i holds the counter, %<tag>.v its value in the body, which runs while
// it is below `bound`. Returns the value's name.
std::string Printer::open_loop(const std::string& tag, const std::string& start, const std::string& bound) {
  const std::string slot = "%" + tag + ".i", v = "%" + tag + ".v";
  line(fmt::format("{} = alloca i64", slot));
  line(fmt::format("store i64 {}, ptr {}", start, slot));
  line(fmt::format("br label %{}.head", tag));
  label(tag + ".head");
  line(fmt::format("{} = load i64, ptr {}", v, slot));
  line(fmt::format("%{}.more = icmp slt i64 {}, {}", tag, v, bound));
  line(fmt::format("br i1 %{}.more, label %{}.body, label %{}.end", tag, tag, tag));
  label(tag + ".body");
  return v;
}

// Loops without metadata of their own carry this id: no runtime unrolling, and a loop the vectorizer made is
// not unrolled again (its interleaved copies are the unrolling). On hosts whose scheduling model asks for it
// (AMD Zen), LLVM otherwise unrolls every loop of unknown trip count by up to 8 with a remainder loop, at
// every level of a nest of short loops (a batch norm's sums over N, H and W of symbolic sizes), and unrolls
// vector loops of known trip count again (a cross-entropy's 8192-long rows): most of the object code and
// of LLVM's time (RESULTS.md, session 39). Scalar loops of known trip count still unroll in full.
namespace {
constexpr const char* kLoopId = "!1002";
constexpr const char* kLoopMetadata[] = {"!1002 = distinct !{!1002, !1003, !1004}", "!1003 = !{!\"llvm.loop.unroll.runtime.disable\"}",
                                         "!1004 = !{!\"llvm.loop.vectorize.followup_vectorized\", !1005}",
                                         "!1005 = !{!\"llvm.loop.unroll.disable\"}"};
}  // namespace

std::string Printer::loop_id() {
  for (const char* definition : kLoopMetadata) metadata(definition);
  return kLoopId;
}

// The end of open_loop's body: the counter moves to `next` (empty: the value plus one).
void Printer::close_loop(const std::string& tag, const std::string& next, std::string loop_metadata) {
  if (loop_metadata.empty()) loop_metadata = loop_id();
  std::string moved = next;
  if (moved.empty()) {
    moved = "%" + tag + ".n";
    line(fmt::format("{} = add nsw i64 %{}.v, 1", moved, tag));
  }
  line(fmt::format("store i64 {}, ptr %{}.i", moved, tag));
  line(fmt::format("br label %{}.head, !llvm.loop {}", tag, loop_metadata));
  label(tag + ".end");
}

void Printer::element_loop(const std::string& column_tile) {
  const auto inner = k_.inner_vars();
  bool any = false;
  for (size_t i = 0; i < k_.body.size(); ++i) any |= scope_[i] == Scope::kElement;
  if (!any) return;
  std::string lo = "0", hi = inner.empty() ? "" : name(k_.vars[inner[0]].extent);
  if (k_.tile > 0) {
    lo = fresh("jlo"), hi = fresh("jhi");
    const std::string end = fresh("jend"), over = fresh("jover");
    line(fmt::format("{} = mul i64 {}, {}", lo, column_tile, k_.tile));
    line(fmt::format("{} = add i64 {}, {}", end, lo, k_.tile));
    line(fmt::format("{} = icmp slt i64 {}, {}", over, name(k_.vars[inner[0]].extent), end));
    line(fmt::format("{} = select i1 {}, i64 {}, i64 {}", hi, over, name(k_.vars[inner[0]].extent), end));
  }
  if (!schedule_.pipelined.empty()) return pipelined_element_loop();
  const bool fast_trig = begin_fast_trig();
  element_pass(lo, hi);
  if (fast_trig) redo_tile_guarded(lo, hi);
  flush_staged(lo, hi);
}

// The element loop over [lo, hi) of the innermost inner variable (the whole row when not tiled).
void Printer::element_pass(const std::string& lo, const std::string& hi) {
  const auto inner = k_.inner_vars();
  auto saved = emitted_;
  pass_ = kElementPass, pass_vars_ = inner, stage_lo_ = lo;
  auto body = [&] {
    for (size_t i = 0; i < k_.body.size(); ++i)
      if (scope_[i] == Scope::kElement) emit(static_cast<int>(i));
    accumulate_next_row();
  };
  if (k_.tile == 0 && schedule_.pipelined.empty()) pass_loop(kElementLoop, inner, body);
  else loop_nest(inner, lo, hi, body);
  pass_ = -1;
  emitted_ = std::move(saved);
}

// After the tiles: a failed check stores 1 into the status word (tiles run on several threads, which
// may all store it).
void Printer::report_failed_checks() {
  line("%checked = load i1, ptr %checkflag");
  line("br i1 %checked, label %check.failed, label %check.done");
  label("check.failed");
  line("store atomic i32 1, ptr %status monotonic, align 4");
  line("br label %check.done");
  label("check.done");
}

// A check that fails sets the function's flag; the tile goes on (its loads and divisions are safe).
void Printer::check(const std::string& v, const std::string& holds) {
  line(fmt::format("{}.old = load i1, ptr %checkflag", v));
  line(fmt::format("{}.bad = xor i1 {}, true", v, holds));
  line(fmt::format("{} = or i1 {}.old, {}.bad", v, v, v));
  line(fmt::format("store i1 {}, ptr %checkflag", v));
}

// ---- reductions -------------------------------------------------------------------------------
void Printer::reduction(int r) {
  const Expr& e = k_.body[r];
  const ScalarType t = e.dtype;
  const ScalarType vt = k_.body[e.a].dtype;  // the value's type (argmax yields int64 positions)
  const char* ty = compute_type(vt);
  const std::string acc = fmt::format("%acc{}", r), pos = fmt::format("%pos{}", r);
  line(fmt::format("{} = alloca {}", acc, ty));
  line(fmt::format("store {} {}, ptr {}", ty, identity(e.reduce, vt), acc));
  const bool arg = e.reduce == ReduceKind::kArgMax || e.reduce == ReduceKind::kArgMin;
  if (arg) {
    line(fmt::format("{} = alloca i64", pos));
    line(fmt::format("store i64 0, ptr {}", pos));
  }
  const bool nan_flag = needs_nan_flag(k_, r);
  const std::string nan = fmt::format("%nan{}", r);
  if (nan_flag) {
    line(fmt::format("{} = alloca i1", nan));
    line(fmt::format("store i1 false, ptr {}", nan));
  }
  auto saved = emitted_;
  pass_ = r, pass_vars_ = k_.loop_vars(e.loop);
  const auto& chunked = schedule_.chunked_sums;
  if (std::find(chunked.begin(), chunked.end(), r) != chunked.end()) {
    chunked_sum(r, acc);
  } else
    pass_loop(e.loop, pass_vars_, [&] {
      for (int i = 0; i < r; ++i)
        if (scope_[i] == Scope::kReduction && loop_of_[i] == e.loop) emit(i);
      if (!arg) return accumulate(r, acc, nan_flag ? nan : "", name(e.a));
      const std::string old = fresh("old"), v = name(e.a);
      line(fmt::format("{} = load {}, ptr {}", old, ty, acc));
      const std::string take = better(e.reduce == ReduceKind::kArgMax, vt, v, old);
      const std::string nv = fresh("nv"), np = fresh("np"), op = fresh("op");
      line(fmt::format("{} = select i1 {}, {} {}, {} {}", nv, take, ty, v, ty, old));
      line(fmt::format("{} = load i64, ptr {}", op, pos));
      line(fmt::format("{} = select i1 {}, i64 {}, i64 {}", np, take, name(e.b), op));
      line(fmt::format("store {} {}, ptr {}", ty, nv, acc));
      line(fmt::format("store i64 {}, ptr {}", np, pos));
    });
  pass_ = -1;
  emitted_ = std::move(saved);
  if (nan_flag) {
    const std::string value = fresh("red"), seen = fresh("seen");
    line(fmt::format("{} = load {}, ptr {}", value, ty, acc));
    line(fmt::format("{} = load i1, ptr {}", seen, nan));
    line(fmt::format("{} = select i1 {}, {} {}, {} {}", name(r), seen, ty, float_literal(NAN, vt), ty, value));
  } else {
    line(fmt::format("{} = load {}, ptr {}", name(r), arg ? "i64" : compute_type(t), arg ? pos : acc));
  }
  emitted_[r] = true;
}

// A float sum whose innermost loop variable is long, in chunks of kSumChunk positions of it: each chunk's
// sum goes into its own accumulator, then into the total `acc` (cpu/schedule.cpp says why).
void Printer::chunked_sum(int r, const std::string& acc) {
  const Expr& e = k_.body[r];
  const char* ty = compute_type(k_.body[e.a].dtype);
  const std::string part = fmt::format("%part{}", r), tag = fresh("sum").substr(1);
  line(fmt::format("{} = alloca {}", part, ty));
  std::vector<std::string> outer;  // the loops of the other variables, outermost first
  for (size_t d = 0; d + 1 < pass_vars_.size(); ++d) {
    outer.push_back(fresh("l").substr(1));
    var_value_[pass_vars_[d]] = open_loop(outer.back(), "0", name(k_.vars[pass_vars_[d]].extent));
  }
  const int innermost = pass_vars_.back();
  const std::string extent = name(k_.vars[innermost].extent), at = open_loop(tag, "0", extent);
  line(fmt::format("store {} {}, ptr {}", ty, identity(e.reduce, k_.body[e.a].dtype), part));
  line(fmt::format("%{}.next = add nsw i64 {}, {}", tag, at, kSumChunk));
  line(fmt::format("%{}.over = icmp slt i64 {}, %{}.next", tag, extent, tag));
  line(fmt::format("%{}.hi = select i1 %{}.over, i64 {}, i64 %{}.next", tag, tag, extent, tag));
  loop_nest({innermost}, at, "%" + tag + ".hi", [&] {
    for (int i = 0; i < r; ++i)
      if (scope_[i] == Scope::kReduction && loop_of_[i] == e.loop) emit(i);
    accumulate(r, part, "", name(e.a));
  });
  const std::string sum = fresh("chunk");
  line(fmt::format("{} = load {}, ptr {}", sum, ty, part));
  accumulate(r, acc, "", sum);
  close_loop(tag, "%" + tag + ".next");
  for (size_t d = outer.size(); d-- > 0;) close_loop(outer[d]);
}

void Printer::accumulate(int r, const std::string& acc, const std::string& nan, const std::string& v) {
  const Expr& e = k_.body[r];
  const ScalarType vt = k_.body[e.a].dtype;
  const char* ty = compute_type(vt);
  const std::string old = fresh("old");
  line(fmt::format("{} = load {}, ptr {}", old, ty, acc));
  if (nan.empty()) return line(fmt::format("store {} {}, ptr {}", ty, combine(e.reduce, vt, old, v), acc));
  const std::string fn =
      fmt::format("llvm.{}.{}", e.reduce == ReduceKind::kMax ? "maxnum" : "minnum", vt == ScalarType::Float ? "f32" : "f64");
  declare(fmt::format("{} @{}({}, {})", ty, fn, ty, ty));
  const std::string m = fresh("m"), is_nan = fresh("isnan"), seen = fresh("seen"), any = fresh("any");
  // nnan nsz: NaN is tracked by the flag; what LLVM needs to vectorize the reduction.
  line(fmt::format("{} = call nnan nsz {} @{}({} {}, {} {})", m, ty, fn, ty, old, ty, v));
  line(fmt::format("store {} {}, ptr {}", ty, m, acc));
  line(fmt::format("{} = fcmp uno {} {}, {}", is_nan, ty, v, v));
  line(fmt::format("{} = load i1, ptr {}", seen, nan));
  line(fmt::format("{} = or i1 {}, {}", any, seen, is_nan));
  line(fmt::format("store i1 {}, ptr {}", any, nan));
}

// ---- values a row's later loops reuse ------------------------------------------------------------
void Printer::row_cache_allocas() {
  std::vector<const char*> types(schedule_.row_cache.size());  // in array order: the IR text is deterministic
  for (const auto& [key, cached] : schedule_.row_cache) types[cached.array] = compute_type(cached.dtype);
  for (size_t array = 0; array < types.size(); ++array)
    line(fmt::format("%rowcache{} = alloca {}, i64 {}, align 64", array, types[array], schedule_.row_elements));
}

std::string Printer::row_position() {
  std::string position = "0";
  for (int v : pass_vars_) {
    const Expr& extent = k_.body[k_.vars[v].extent];
    const std::string scaled = fresh("rpos"), next = fresh("rpos");
    line(fmt::format("{} = mul nsw i64 {}, {}", scaled, position, extent.ivalue));
    line(fmt::format("{} = add nsw i64 {}, {}", next, scaled, var_value_.at(v)));
    position = next;
  }
  return position;
}

const RowCacheArray* Printer::cached_value(int i) const {
  if (pass_ < 0 || schedule_.keys.empty() || (scope_[i] != Scope::kReduction && scope_[i] != Scope::kElement)) return nullptr;
  auto it = schedule_.row_cache.find(schedule_.keys[i]);
  return it == schedule_.row_cache.end() ? nullptr : &it->second;
}

std::string Printer::row_cache_element(const RowCacheArray& c, const char* stem) {
  const std::string slot = fresh(stem);
  line(fmt::format("{} = getelementptr {}, ptr %rowcache{}, i64 {}", slot, compute_type(c.dtype), c.array, row_position()));
  return slot;
}

bool Printer::load_cached(int i) {
  const RowCacheArray* c = cached_value(i);
  if (!c || pass_ <= c->first_pass) return false;
  const std::string slot = row_cache_element(*c, "cached");
  line(fmt::format("{} = load {}, ptr {}", name(i), compute_type(c->dtype), slot));
  return true;
}

void Printer::store_if_cached(int i) {
  const RowCacheArray* c = cached_value(i);
  if (!c || pass_ != c->first_pass) return;
  const std::string slot = row_cache_element(*c, "keep");
  line(fmt::format("store {} {}, ptr {}", compute_type(c->dtype), name(i), slot));
}

}  // namespace llvm_ir

std::string emit_llvm_ir(const Kernel& kernel, Schedule* schedule) {
  const Placement placement = place(kernel);
  const llvm_ir::CpuSchedule decided = llvm_ir::schedule_cpu_kernel(kernel, placement);
  if (schedule) *schedule = decided.decisions(kernel);
  return llvm_ir::Printer(kernel, placement, decided).run();
}

std::string emit_llvm_ir(const Kernel& kernel, const llvm_ir::CpuSchedule& schedule) {
  return llvm_ir::Printer(kernel, place(kernel), schedule).run();
}

}  // namespace jitc::inductor
