#include "inductor/loop_order.h"

#include "inductor/index_analysis.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace jitc::inductor {

namespace {

// The vars outermost first: those of extent 1 (they step through nothing) in their current order, then
// the others by decreasing stride. Empty unless the strides are distinct and the smallest is 1.
std::vector<int> order_by_stride(const Kernel& k, const std::vector<int64_t>& strides) {
  std::vector<int> ones, others;
  for (size_t v = 0; v < k.vars.size(); ++v) (integer_constant(k, k.vars[v].extent) == 1 ? ones : others).push_back(static_cast<int>(v));
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
  const std::vector<AffineForm> forms = affine_forms(k);
  std::vector<int> order;
  for (const Expr& e : k.body) {
    if (e.op != ScalarOp::kStore) continue;
    // A store through a loaded index (a scatter) may hit one element twice: its order must stay.
    const AffineForm& address = forms[e.a];
    if (!address.affine() || address.loaded) return;
    std::vector<int> mine = order_by_stride(k, address.coefficient);
    if (mine.empty() || (!order.empty() && order != mine)) return;
    order = std::move(mine);
  }
  if (!order.empty() && order.back() != inner[0]) reorder(k, order);
}

}  // namespace jitc::inductor
