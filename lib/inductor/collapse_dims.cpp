#include "inductor/collapse_dims.h"

#include "inductor/index_analysis.h"

#include <c10/core/ScalarType.h>

#include <optional>
#include <vector>

namespace jitc::inductor {

namespace {

// Whether an address runs over outer and inner as one run.
bool runs_over_both(const AffineForm& address, int outer, int inner, int64_t inner_extent) {
  return !address.opaque[outer] && !address.opaque[inner] && address.coefficient[outer] == address.coefficient[inner] * inner_extent;
}

// True when every address reads the pair as one run of extent(outer) * extent(inner) elements
// (c_outer == c_inner * extent(inner)) and nothing else uses the pair other than affinely.
bool mergeable(const Kernel& k, int outer, int inner, int64_t inner_extent) {
  const std::vector<AffineForm> forms = affine_forms(k);
  for (size_t i = 0; i < k.body.size(); ++i) {
    if (forms[i].opaque[outer] || forms[i].opaque[inner]) return false;
    const Expr& e = k.body[i];
    if ((e.op == ScalarOp::kLoad || e.op == ScalarOp::kStore) && !runs_over_both(forms[e.a], outer, inner, inner_extent)) return false;
  }
  return true;
}

int append_constant(Kernel& k, int64_t value) {
  Expr c;
  c.op = ScalarOp::kConst;
  c.dtype = c10::ScalarType::Long;
  c.ivalue = value;
  k.body.push_back(c);
  return static_cast<int>(k.body.size()) - 1;
}

// An inner dim of size 1 (the trailing 1s of a [512, 256, 1, 1] weight, of pooled [N, C, 1, 1]
// features) would make tiles of one element: a CUDA block, or a CPU element loop, per element. Its
// var is always 0, so the nearest outer dim of another size takes its place whatever the addresses.
void replace_unit_inner_dim(Kernel& k, int u) {
  if (integer_constant(k, k.vars[u].extent) != 1) return;
  const auto outer = k.outer_vars();
  for (size_t d = outer.size(); d-- > 0;) {
    const int o = outer[d];
    if (integer_constant(k, k.vars[o].extent) == 1) continue;
    for (Expr& e : k.body) {
      if (e.op != ScalarOp::kVar) continue;
      if (e.var == u) e = Expr{ScalarOp::kConst, c10::ScalarType::Long};
      else if (e.var == o) e.var = u;
    }
    k.vars[u].extent = k.vars[o].extent;
    k.vars[o].extent = append_constant(k, 1);
    return;
  }
}

// Whether every store runs over both as one run: a store that reads one var only (a row's value, stored
// once per row) would run once per element of the merged dim, and an update of an input stored in place
// (in_place_updates.h) would then read and write one element from many threads.
bool stores_run_over_both(const Kernel& k, int outer, int inner, int64_t inner_extent) {
  const std::vector<AffineForm> forms = affine_forms(k);
  for (const Expr& e : k.body)
    if (e.op == ScalarOp::kStore && !runs_over_both(forms[e.a], outer, inner, inner_extent)) return false;
  return true;
}

class DivisionMerge {
 public:
  DivisionMerge(Kernel& k, int outer, int inner, int64_t inner_extent) : k_(k), outer_(outer), inner_(inner) {
    const std::vector<AffineForm> forms = affine_forms(k);
    const size_t n = k.body.size();
    depends_.assign(n, false);
    flat_address_.assign(n, false);
    for (size_t i = 0; i < n; ++i) {
      const Expr& e = k.body[i];
      depends_[i] = (e.op == ScalarOp::kVar && (e.var == outer || e.var == inner)) || depends(e.a) || depends(e.b) || depends(e.c);
      if ((e.op == ScalarOp::kLoad || e.op == ScalarOp::kStore) && runs_over_both(forms[e.a], outer, inner, inner_extent))
        flat_address_[i] = true;
    }
    extent_ = inner_extent;
  }

  // The rewritten body: each expression that reads outer or inner once per reading of them (flat, split),
  // each load and store once.
  void run(int64_t outer_extent) {
    std::vector<Expr> old = std::move(k_.body);
    k_.body.clear();
    flat_.assign(old.size(), -1);
    split_.assign(old.size(), -1);
    const int extent = constant(extent_);
    for (size_t i = 0; i < old.size(); ++i) {
      const Expr& e = old[i];
      if (e.op == ScalarOp::kVar && e.var == outer_) {
        flat_[i] = constant(0);
        split_[i] = push(binary(ScalarOp::kDiv, inner_var(), extent));
      } else if (e.op == ScalarOp::kVar && e.var == inner_) {
        flat_[i] = inner_var();
        const int quotient = push(binary(ScalarOp::kDiv, flat_[i], extent));
        split_[i] = push(binary(ScalarOp::kSub, flat_[i], push(binary(ScalarOp::kMul, quotient, extent))));
      } else if (!depends_[i] || e.op == ScalarOp::kLoad || e.op == ScalarOp::kStore) {
        Expr copy = e;
        const std::vector<int>& address = flat_address_[i] ? flat_ : split_;
        if (copy.a >= 0) copy.a = (e.op == ScalarOp::kLoad || e.op == ScalarOp::kStore) ? address[e.a] : split_[e.a];
        if (copy.b >= 0) copy.b = split_[e.b];
        if (copy.c >= 0) copy.c = split_[e.c];
        flat_[i] = split_[i] = push(copy);
      } else {
        flat_[i] = push(remapped(e, flat_));
        split_[i] = push(remapped(e, split_));
      }
    }
    for (LoopVar& v : k_.vars) v.extent = flat_[v.extent];  // extents read no loop var
    k_.vars[inner_].extent = constant(outer_extent * extent_);
    k_.vars[outer_].extent = constant(1);
  }

 private:
  bool depends(int operand) const { return operand >= 0 && depends_[operand]; }
  int push(const Expr& e) {
    k_.body.push_back(e);
    return static_cast<int>(k_.body.size()) - 1;
  }
  int constant(int64_t value) { return append_constant(k_, value); }
  int inner_var() {
    Expr v;
    v.op = ScalarOp::kVar;
    v.dtype = c10::ScalarType::Long;
    v.var = inner_;
    return push(v);
  }
  static Expr binary(ScalarOp op, int a, int b) {
    Expr e;
    e.op = op;
    e.dtype = c10::ScalarType::Long;
    e.a = a;
    e.b = b;
    return e;
  }
  static Expr remapped(Expr e, const std::vector<int>& map) {
    if (e.a >= 0) e.a = map[e.a];
    if (e.b >= 0) e.b = map[e.b];
    if (e.c >= 0) e.c = map[e.c];
    return e;
  }

  Kernel& k_;
  int outer_, inner_;
  int64_t extent_ = 0;
  std::vector<bool> depends_, flat_address_;
  std::vector<int> flat_, split_;  // per old expression: its new index where outer and inner read flat / split
};

}  // namespace

void collapse_inner_dims(Kernel& k, int64_t divide_below) {
  const auto inner = k.inner_vars();
  if (k.tile <= 0 || inner.size() != 1) return;
  const int u = inner[0];
  replace_unit_inner_dim(k, u);
  const auto outer = k.outer_vars();
  for (size_t d = outer.size(); d-- > 0;) {
    const int o = outer[d];
    const auto inner_extent = integer_constant(k, k.vars[u].extent), outer_extent = integer_constant(k, k.vars[o].extent);
    if (!inner_extent || !outer_extent) return;
    if (*outer_extent == 1) continue;  // already merged, or a dim of size 1
    if (!mergeable(k, o, u, *inner_extent)) {
      if (*inner_extent >= divide_below || !stores_run_over_both(k, o, u, *inner_extent)) return;
      DivisionMerge(k, o, u, *inner_extent).run(*outer_extent);
      // The merge leaves a flat and a split copy of index arithmetic where one of them is read, and the
      // CUDA printer sizes vector groups by the element expressions it prints.
      remove_dead_expressions(k);
      continue;
    }
    // outer reads as 0 and inner runs over both: c_o * o + c_i * i == c_i * (o * extent(i) + i).
    for (Expr& e : k.body)
      if (e.op == ScalarOp::kVar && e.var == o) e = Expr{ScalarOp::kConst, c10::ScalarType::Long};
    k.vars[u].extent = append_constant(k, *outer_extent * *inner_extent);
    k.vars[o].extent = append_constant(k, 1);
  }
}

}  // namespace jitc::inductor
