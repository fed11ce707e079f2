#include "inductor/loop_order.h"

#include <c10/core/ScalarType.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <vector>

namespace jitc::inductor {

namespace {

// An expression as sum over vars of coefficient * var, plus a part free of vars; all zeros for an
// expression free of vars; nullopt where it is not affine in them (a product of vars, a division, a value
// loaded through them...).
using Coefficients = std::vector<int64_t>;

std::optional<int64_t> integer_constant(const Kernel& k, int e) {
  const Expr& x = k.body[e];
  if (x.op != ScalarOp::kConst || c10::isFloatingType(x.dtype)) return std::nullopt;
  return x.ivalue;
}

bool is_free(const Coefficients& c) {
  return std::all_of(c.begin(), c.end(), [](int64_t x) { return x == 0; });
}

class AffineForms {
 public:
  explicit AffineForms(const Kernel& k) : k_(k), forms_(k.body.size()) {
    for (size_t i = 0; i < k.body.size(); ++i) forms_[i] = form_of(k.body[i]);
  }
  const std::optional<Coefficients>& of(int e) const { return forms_[e]; }

 private:
  std::optional<Coefficients> form_of(const Expr& e) const {
    Coefficients c(k_.vars.size(), 0);
    switch (e.op) {
      case ScalarOp::kVar: c[e.var] = 1; return c;
      case ScalarOp::kAdd:
      case ScalarOp::kSub: {
        const auto& a = forms_[e.a];
        const auto& b = forms_[e.b];
        if (!a || !b) return std::nullopt;
        for (size_t v = 0; v < c.size(); ++v) c[v] = e.op == ScalarOp::kAdd ? (*a)[v] + (*b)[v] : (*a)[v] - (*b)[v];
        return c;
      }
      case ScalarOp::kMul: {
        const auto& a = forms_[e.a];
        const auto& b = forms_[e.b];
        if (!a || !b) return std::nullopt;
        if (is_free(*a) && is_free(*b)) return c;
        const auto scale = is_free(*b) ? integer_constant(k_, e.b) : is_free(*a) ? integer_constant(k_, e.a) : std::nullopt;
        if (!scale) return std::nullopt;
        const Coefficients& affine = is_free(*b) ? *a : *b;
        for (size_t v = 0; v < c.size(); ++v) c[v] = affine[v] * *scale;
        return c;
      }
      default:  // free of vars when every operand is (a load through a free address, a symbol, ...)
        for (int operand : {e.a, e.b, e.c})
          if (operand >= 0 && (!forms_[operand] || !is_free(*forms_[operand]))) return std::nullopt;
        return c;
    }
  }

  const Kernel& k_;
  std::vector<std::optional<Coefficients>> forms_;
};

// The vars outermost first: those of extent 1 (they step through nothing) in their current order, then
// the others by decreasing stride. Empty unless the strides are distinct and the smallest is 1.
std::vector<int> order_by_stride(const Kernel& k, const Coefficients& strides) {
  std::vector<int> ones, others;
  for (size_t v = 0; v < k.vars.size(); ++v)
    (integer_constant(k, k.vars[v].extent) == 1 ? ones : others).push_back(static_cast<int>(v));
  if (others.empty()) return {};
  std::stable_sort(others.begin(), others.end(), [&](int a, int b) { return std::abs(strides[a]) > std::abs(strides[b]); });
  for (size_t i = 0; i + 1 < others.size(); ++i)
    if (std::abs(strides[others[i]]) == std::abs(strides[others[i + 1]])) return {};
  if (strides[others.back()] != 1) return {};
  ones.insert(ones.end(), others.begin(), others.end());
  return ones;
}

void reorder(Kernel& k, const std::vector<int>& order) {
  std::vector<int> position(k.vars.size());
  std::vector<LoopVar> vars;
  for (size_t p = 0; p < order.size(); ++p) {
    LoopVar v = k.vars[order[p]];
    v.kind = p + 1 == order.size() ? LoopVar::Kind::kInner : LoopVar::Kind::kOuter;
    position[order[p]] = static_cast<int>(p);
    vars.push_back(v);
  }
  k.vars = std::move(vars);
  for (Expr& e : k.body)
    if (e.op == ScalarOp::kVar) e.var = position[e.var];
}

}  // namespace

void order_loops_as_stored(Kernel& k) {
  const auto inner = k.inner_vars();
  if (k.tile <= 0 || inner.size() != 1 || k.num_reduction_loops > 0 || inner.size() + k.outer_vars().size() != k.vars.size()) return;
  for (const LoopVar& v : k.vars)
    if (!integer_constant(k, v.extent)) return;
  const AffineForms forms(k);
  std::vector<int> order;
  for (const Expr& e : k.body) {
    if (e.op != ScalarOp::kStore) continue;
    const auto& address = forms.of(e.a);
    if (!address) return;
    std::vector<int> mine = order_by_stride(k, *address);
    if (mine.empty() || (!order.empty() && order != mine)) return;
    order = std::move(mine);
  }
  if (!order.empty() && order.back() != inner[0]) reorder(k, order);
}

}  // namespace jitc::inductor
