// KernelBuilder: builds a Kernel's SSA body. Expressions are hash-consed (building the same expression
// twice yields the same id: common subexpressions inside a kernel are shared for free) and integer
// index arithmetic is folded (x*1, x+0, constants), so the IR stays small and readable. Tracks which
// loop variables each expression depends on, which is how a lowering tells a per-row value from a
// per-element one.
#pragma once
#include "graph/sym_expr.h"
#include "inductor/kernel_ir.h"

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace jitc::inductor {

using Index = std::vector<int>;  // one int64 expression per dim

// Compute type of a storage dtype: half and bfloat16 compute in float (ATen's opmath type).
c10::ScalarType compute_type_of(c10::ScalarType dtype);

class KernelBuilder {
 public:
  explicit KernelBuilder(std::string name) { kernel_.name = std::move(name); }

  // Loop variables. Outer vars must be added first, in dim order.
  int outer_var(const graph::SymExpr& extent) { return add_var(LoopVar::Kind::kOuter, extent, -1); }
  int inner_var(const graph::SymExpr& extent) { return add_var(LoopVar::Kind::kInner, extent, -1); }
  // A new reduction loop over `extents`; returns its loop id and fills `vars` with its variables.
  int reduction_loop(const std::vector<graph::SymExpr>& extents, std::vector<int>* vars);
  // The reduction loop whose operand is being built (opened by reduction_loop, closed by its reduce);
  // -1 outside every reduction's operand.
  int open_reduction_loop() const { return open_loops_.empty() ? -1 : open_loops_.back(); }
  // The elements a reduction loop visits: the product of its constant extents, -1 when one is a symbol.
  int64_t loop_elements(int loop) const;

  int buffer(const std::string& name, c10::ScalarType dtype, bool written);

  // Leaves.
  int var(int v);
  int sym(int s);
  int sym_double(int s);  // a double argument of the call: symbol s holds its bits
  int index_constant(int64_t v) { return integer(v, c10::ScalarType::Long); }
  int integer(int64_t v, c10::ScalarType dtype);
  int floating(double v, c10::ScalarType dtype);
  int constant(double v, c10::ScalarType dtype);  // any dtype: integers and bools are converted
  int extent(const graph::SymExpr& e);            // a size as an int64 expression

  // Arithmetic. Binary operands must have the same dtype; comparisons yield bool.
  int unary(ScalarOp op, int a);
  int binary(ScalarOp op, int a, int b);
  int where(int cond, int a, int b);
  int fma(int a, int b, int c);  // a * b + c rounded once (floats)
  int cast(int a, c10::ScalarType dtype);
  // A float rounded to the precision of `dtype` when it is half or bfloat16 (else a itself). Folded
  // where `a` holds such a value already (see holds) and for constants.
  int round_to(int a, c10::ScalarType dtype);
  int load(int buffer, int index);
  void store(int buffer, int index, int value);
  // A run-time check that bool `holds` is true (kCheck), emitted wherever `holds` is computed, or inside
  // the reduction loop the element being built runs over (see enter_element).
  void check(int holds);
  // The index of the element whose computation is being built (LoweringContext::at keeps it). A check
  // made meanwhile whose condition does not depend on that index's reduction loop (an index tensor
  // broadcast along it) still goes inside that loop: a reduction over no elements then checks nothing,
  // as eager computes no element there.
  void enter_element(const Index& index) { elements_.push_back(index); }
  void leave_element() { elements_.pop_back(); }
  int reduce(ReduceKind kind, int value, int loop, int position = -1);

  // Index helpers (int64, folded).
  int add(int a, int b) { return binary(ScalarOp::kAdd, a, b); }
  int mul(int a, int b) { return binary(ScalarOp::kMul, a, b); }
  int linear(const Index& index, const std::vector<graph::SymExpr>& strides);  // sum of index[d] * strides[d]

  c10::ScalarType dtype(int e) const { return kernel_.body[e].dtype; }
  const Expr& expr(int e) const { return kernel_.body[e]; }
  // Loop variables an expression depends on (bit v = var v); reductions count as their loop's vars.
  uint64_t deps(int e) const { return deps_[e]; }
  uint64_t vars_of_kind(LoopVar::Kind kind) const;
  bool is_constant(int e, int64_t* value) const;

  void set_tile(int64_t tile) { kernel_.tile = tile; }
  const Kernel& kernel() const { return kernel_; }
  Kernel take() { return std::move(kernel_); }

 private:
  // Whether the float expression `a` is exactly a value of `dtype`: a rounding to it, a load from a
  // buffer of it, a constant it represents, a small integer, or a choice between such values.
  bool holds(int a, c10::ScalarType dtype) const;
  int add_var(LoopVar::Kind kind, const graph::SymExpr& extent, int loop);
  int intern(const Expr& e, uint64_t deps);

  Kernel kernel_;
  std::vector<uint64_t> deps_;
  std::vector<Index> elements_;
  std::vector<int> open_loops_;
  std::map<std::tuple<int, int, int, int, int, int, int, int, int, int64_t, int64_t>, int> interned_;  // value as bits
};

}  // namespace jitc::inductor
