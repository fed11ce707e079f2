// The CPU code generator's printer, shared by its files: codegen.cpp (functions, rows, loops, reductions
// one row at a time), expressions.cpp (scalar expressions, loads, stores, reduction combiners),
// codegen_columns.cpp (reductions over outer dims, rows side by side), codegen_positions.cpp (values of
// the inner position computed once per call), codegen_pipeline.cpp (a row's
// first loop run inside the previous row's element loop), codegen_prefetch.cpp (prefetch of the next row
// in row kernels), codegen_streaming.cpp (non-temporal stores of large outputs) and codegen_trig.cpp (sin
// and cos). Internal to this folder: emit_llvm_ir (codegen.h) is the interface.
#pragma once
#include "inductor/backend.h"
#include "inductor/cpu/llvm_emitter.h"
#include "inductor/cpu/schedule.h"
#include "inductor/kernel_ir.h"
#include "inductor/placement.h"

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace jitc::inductor::llvm_ir {

class Printer : private Emitter {
 public:
  // Prints what `schedule` (schedule_cpu_kernel's) decided for kernel k placed as `placement`.
  Printer(const Kernel& k, const Placement& placement, const CpuSchedule& schedule);
  std::string run();

 private:
  // ---- functions and rows (cpu/codegen.cpp) ------------------------------------------------------
  std::string body_function(bool columns);
  std::string wrapper();
  std::string tiles_function();
  std::string tiles_per_row();
  std::string row_count();
  void row();
  // A loop nest over `vars`; the innermost is bounded by [lo, hi) when given. Calls body() inside.
  void loop_nest(const std::vector<int>& vars, const std::string& lo, const std::string& hi, const std::function<void()>& body);
  std::string open_loop(const std::string& tag, const std::string& start, const std::string& bound);
  std::string loop_id();  // the back edges' metadata node where a loop has none of its own
  // `loop_metadata`: a metadata node for the back edge (empty: loop_id()).
  void close_loop(const std::string& tag, const std::string& next = "", std::string loop_metadata = "");
  void element_loop(const std::string& column_tile);
  void element_pass(const std::string& lo, const std::string& hi);
  void reduction(int r);
  void chunked_sum(int r, const std::string& acc);
  void check(const std::string& v, const std::string& holds);  // a kCheck
  void report_failed_checks();                                 // at the body's exit
  // One step of reduction r (not argmax/argmin): value `v` combined into accumulator `acc` (and `nan`).
  void accumulate(int r, const std::string& acc, const std::string& nan, const std::string& v);

  // ---- values a row's later loops reuse (cpu/codegen.cpp) ----------------------------------------
  // An expensive value (exp, erf, ...) that a later loop of the row computes again at the same position
  // is stored by the first loop that computes it into a row-sized array and loaded by the later ones.
  void row_cache_allocas();
  // emit(i) asks: true when i was loaded from the row cache instead of being computed.
  bool load_cached(int i);
  void store_if_cached(int i);  // after computing i: the first loop computing it keeps it
  std::string row_position();   // the current loop's position in the row, 0 .. row_elements_ - 1

  // ---- values of the inner position (cpu/codegen_positions.cpp) ------------------------------------
  void fill_position_values();      // in the body's entry
  bool load_position_value(int i);  // emit(i) asks: true when the element loop loaded i from its array

  // ---- prefetch of the next row (cpu/codegen_prefetch.cpp) ---------------------------------------
  // The loop nest of reduction loop `loop` (kElementLoop: the element loop) over `vars`.
  void pass_loop(int loop, const std::vector<int>& vars, const std::function<void()>& body);
  void prefetch_next_row(const std::string& position);

  // ---- pipelined rows (cpu/codegen_pipeline.cpp) ---------------------------------------------------
  bool pipelined(int r) const;  // reduction r's result is carried over from the previous row
  void pipeline_prologue();     // entry block: the carried accumulators, filled with the range's first row
  void reset_carried();
  void pipelined_reduction(int r);
  void pipelined_element_loop();
  void accumulate_next_row();  // inside the element loop
  void accumulate_row(const std::string& tile, const std::string& position);

  // ---- streaming stores of large outputs (cpu/codegen_streaming.cpp) -----------------------------
  void declare_stream_copy();
  void stage_allocas();
  std::string stage_address(const Expr& e);  // empty: the store goes straight to its buffer
  void flush_staged(const std::string& lo, const std::string& hi);
  void fence_streaming_stores();

  // ---- sin and cos in the element loop (cpu/codegen_trig.cpp) -------------------------------------
  bool begin_fast_trig();
  void redo_tile_guarded(const std::string& lo, const std::string& hi);
  bool fast_trig_applies(const Expr& e) const;
  void fast_trig(const std::string& v, const Expr& e);
  void guarded_trig(const std::string& v, const Expr& e);
  SinCos shared_sincos(const std::string& stem, const std::string& x);

  // ---- expressions (cpu/expressions.cpp) ----------------------------------------------------------
  // The name of expression e: entry values have one name; the others carry the current context's suffix,
  // so that a value computed once per lane loop (rows side by side) gets a name per loop, and element
  // values also the element loop's (its second pass, cpu/codegen_trig.cpp).
  std::string name(int e) const;
  std::string emit(int i);
  // The values of `exprs` where variable `var` takes `value`, emitted in a context of their own (the
  // current loop's values stay as they are).
  std::vector<std::string> emit_with(const std::vector<int>& exprs, int var, const std::string& value);
  std::vector<std::string> emit_with(const std::vector<int>& exprs, const std::vector<std::pair<int, std::string>>& values);
  // An expression's name, its operands' names, its dtype and its first operand's, its LLVM compute type
  // and whether it is a float: named once per expression, shared by the three functions that print it.
  struct ExprNames {
    std::string v, a, b;
    ScalarType t, at;
    const char* ty;
    bool f;
  };
  ExprNames names_of(int i, const Expr& e) const;
  void expr(int i, const Expr& e);
  void unary_expr(const Expr& e, const ExprNames& names);   // math of one operand
  void binary_expr(const Expr& e, const ExprNames& names);  // arithmetic, bitwise ops, comparisons
  std::string address(const Expr& e);
  void load(const std::string& v, const Expr& e);
  void store(const Expr& e);
  std::string identity(ReduceKind kind, ScalarType t);
  std::string combine(ReduceKind kind, ScalarType t, const std::string& acc, const std::string& v);
  std::string better(bool max, ScalarType t, const std::string& v, const std::string& acc);

  // ---- rows side by side (cpu/codegen_columns.cpp) -----------------------------------------------
  std::string columns_guard();
  std::string column_tiles();
  void column_allocas();
  void column_row();
  void column_elements(const std::string& skip);
  // A loop over the lanes [lo, lanes_) of the block, with a fresh context: row values are computed
  // again (or read from their lane arrays) for the lane. Calls body(lane) inside.
  void lane_loop(const std::string& lo, const std::function<void(const std::string& lane)>& body);
  void column_reduction(int r);
  void column_accumulate(int r, const std::string& lane);
  bool chunked_sum(const Expr& e) const;
  void flush_chunk(int r, bool counted);
  void materialize_after(int r);
  std::string lane_slot(const std::string& array, const char* type, const std::string& lane);
  void load_lane(int e);
  void load_slot(const std::string& v, const std::string& slot, const char* type);
  void store_lane(const std::string& slot, const char* type, const std::string& value);

  const Kernel& k_;
  const CpuSchedule& schedule_;
  const bool checks_;  // the kernel has kCheck expressions: it takes a status word
  std::vector<Scope> scope_;
  std::vector<int> loop_of_;
  std::vector<bool> emitted_;
  std::unordered_map<int, std::string> var_value_;
  std::string tiles_per_row_;

  // Rows side by side: the current context's name suffix, lane and the block's first column; per
  // expression the array of its per-lane values and their type (empty: computed where used).
  std::string suffix_, lane_, first_column_;
  std::vector<std::string> lane_array_;
  std::vector<const char*> lane_type_;

  // The row cache array expression i reads in the current pass, if any; its element at this position.
  // pass_: the body index of the reduction whose loop is being printed (kElementPass: the element loop;
  // -1: none).
  const RowCacheArray* cached_value(int i) const;
  std::string row_cache_element(const RowCacheArray& c, const char* stem);
  int pass_ = -1;
  std::vector<int> pass_vars_;

  // Streaming stores: the element loop's first position in the current tile.
  std::string stage_lo_;

  // Pipelined rows: the tile index of the row the current element loop reads ahead.
  std::string next_row_;

  // sin and cos in the element loop: the flag a lane outside sincos_float's range raises (empty: sin and
  // cos are guarded per element); per operand its sin and cos; the suffix of the element loop's second pass.
  std::string trig_flag_;
  std::unordered_map<std::string, SinCos> fast_sincos_;
  bool guarded_pass_ = false;  // in the element loop's second pass
  std::string element_suffix_;
};

}  // namespace jitc::inductor::llvm_ir
