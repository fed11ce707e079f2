// The CPU code generator's printer, shared by its files: codegen.cpp (functions, rows, loops, reductions
// one row at a time), expressions.cpp (scalar expressions, loads, stores, reduction combiners),
// codegen_columns.cpp (reductions over outer dims, rows side by side), codegen_pipeline.cpp (a row's
// first loop run inside the previous row's element loop), codegen_prefetch.cpp (prefetch of the next row
// in row kernels), codegen_streaming.cpp (non-temporal stores of large outputs) and codegen_trig.cpp (sin
// and cos). Internal to this folder: emit_llvm_ir (codegen.h) is the interface.
#pragma once
#include "inductor/backend.h"
#include "inductor/cpu/llvm_emitter.h"
#include "inductor/kernel_ir.h"
#include "inductor/placement.h"

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace jitc::inductor::llvm_ir {

class Printer : private Emitter {
 public:
  explicit Printer(const Kernel& k);
  std::string run();
  const Schedule& schedule() const { return schedule_; }  // what run() decided

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
  void close_loop(const std::string& tag, const std::string& next = "");
  void element_loop(const std::string& column_tile);
  void element_pass(const std::string& lo, const std::string& hi);
  void reduction(int r);
  void check(const std::string& v, const std::string& holds);  // a kCheck
  void report_failed_checks();                                 // at the body's exit
  // Float max/min reductions track NaN in a flag of their own (maxnum ignores NaN; ATen's max keeps it).
  bool needs_nan_flag(int r) const;
  // One step of reduction r (not argmax/argmin): value `v` combined into accumulator `acc` (and `nan`).
  void accumulate(int r, const std::string& acc, const std::string& nan, const std::string& v);

  // ---- values a row's later loops reuse (cpu/codegen.cpp) ----------------------------------------
  // An expensive value (exp, erf, ...) that a later loop of the row computes again at the same position
  // (softmax's exp(x - max), summed by one loop and scaled by the element loop) is stored by the first
  // loop that computes it into a row-sized array on the stack and loaded by the later ones.
  void plan_row_cache();
  void row_cache_allocas();
  // emit(i) asks: true when i was loaded from the row cache instead of being computed.
  bool load_cached(int i);
  void store_if_cached(int i);  // after computing i: the first loop computing it keeps it
  std::string row_position();   // the current loop's position in the row, 0 .. row_elements_ - 1

  // ---- prefetch of the next row (cpu/codegen_prefetch.cpp) ---------------------------------------
  void plan_row_prefetch();
  // The loop nest of reduction loop `loop` (kElementLoop: the element loop) over `vars`.
  void pass_loop(int loop, const std::vector<int>& vars, const std::function<void()>& body);
  void prefetch_next_row(const std::string& position);

  // ---- pipelined rows (cpu/codegen_pipeline.cpp) ---------------------------------------------------
  void plan_row_pipeline();
  bool pipelined(int r) const;  // reduction r's result is carried over from the previous row
  void pipeline_prologue();     // entry block: the carried accumulators, filled with the range's first row
  void reset_carried();
  void pipelined_reduction(int r);
  void pipelined_element_loop();
  void accumulate_next_row();  // inside the element loop
  void accumulate_row(const std::string& tile, const std::string& position);

  // ---- streaming stores of large outputs (cpu/codegen_streaming.cpp) -----------------------------
  void plan_streaming_stores();
  void stage_allocas();
  std::string stage_address(const Expr& e);  // empty: the store goes straight to its buffer
  void flush_staged(const std::string& lo, const std::string& hi);
  void fence_streaming_stores();

  // ---- sin and cos in the element loop (cpu/codegen_trig.cpp) -------------------------------------
  bool begin_fast_trig();
  bool fast_trig_planned() const;  // float sin or cos in the element loop, and no buffer read and written
  bool stores_into_a_read_buffer() const;
  void redo_tile_with_libm(const std::string& lo, const std::string& hi);
  bool fast_trig_applies(const Expr& e) const;
  void fast_trig(const std::string& v, const Expr& e);

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
  int column_lanes();
  void find_kept_row_values();
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
  Schedule schedule_;
  const bool checks_;  // the kernel has kCheck expressions: it takes a status word
  std::vector<Scope> scope_;
  std::vector<int> loop_of_;
  std::vector<bool> emitted_;
  std::unordered_map<int, std::string> var_value_;
  std::string tiles_per_row_;

  // Rows side by side: lanes per block (0: one row per tile); guarded_: the block fits the last outer dim
  // only for some symbol values, checked at run time; the current context's name suffix, lane and the
  // block's first column; per expression the array of its per-lane values and their type (empty:
  // computed where used), and whether a later reduction loop needs it kept in an array.
  int lanes_ = 0;
  bool guarded_ = false;
  std::string suffix_, lane_, first_column_;
  std::vector<std::string> lane_array_;
  std::vector<const char*> lane_type_;
  std::vector<bool> needs_array_;

  // Row cache: per positional key of a cached value, its array and the pass that fills it. A pass is the
  // body index of the reduction whose loop is being printed (kElementPass: the element loop; -1: none).
  struct CachedValue {
    int array;
    int first_pass;
    const char* type;  // its LLVM type
  };
  // The cached value expression i reads in the current pass, if any; its element at this position.
  const CachedValue* cached_value(int i) const;
  std::string row_cache_element(const CachedValue& c, const char* stem);
  static constexpr int kElementPass = 1 << 30;
  int64_t row_elements_ = 0;
  std::vector<int> keys_;
  std::unordered_map<int, CachedValue> row_cache_;
  int pass_ = -1;
  std::vector<int> pass_vars_;

  // Prefetch of the next row: the first loop's loads to prefetch (buffer, index expression, elements
  // between rows), the loop that prefetches them (-1: none) and the first loop's variable.
  struct RowPrefetch {
    int buffer;
    int index;
    int64_t row_step;
  };
  static constexpr int kElementLoop = -2;
  std::vector<RowPrefetch> prefetch_;
  int prefetch_pass_loop_ = -1;
  int prefetch_first_var_ = -1;
  int64_t prefetch_row_elements_ = 0;

  // Streaming stores: per staged store its buffer, index expression, stage array and the array's
  // elements (a row, or a tile); stage_lo_ is the element loop's first position in the current tile.
  struct StagedStore {
    int buffer;
    int index;
    int array;
    int64_t elements;
  };
  std::vector<StagedStore> staged_;
  std::string stage_lo_;

  // Pipelined rows: the first loop's reductions whose results are carried over from the previous row,
  // and the tile index of the row the current element loop reads ahead.
  std::vector<int> pipelined_;
  std::string next_row_;

  // sin and cos in the element loop: the flag a lane outside sincos_float's range raises (empty: sin and
  // cos go through libm); per operand its sin and cos; the suffix of the element loop's second pass.
  std::string trig_flag_;
  std::unordered_map<std::string, SinCos> fast_sincos_;
  std::string element_suffix_;
};

}  // namespace jitc::inductor::llvm_ir
