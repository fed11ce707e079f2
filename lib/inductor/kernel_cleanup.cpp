// Kernel-wide clean-ups that passes rewriting a kernel's expressions share (kernel_ir.h).
#include "inductor/kernel_ir.h"

#include <c10/core/ScalarType.h>

#include <algorithm>
#include <bit>
#include <map>
#include <tuple>
#include <vector>

namespace jitc::inductor {

namespace {

void remap_operands(Expr& e, const std::vector<int>& index) {
  for (int* operand : {&e.a, &e.b, &e.c})
    if (*operand >= 0) *operand = index[*operand];
}

}  // namespace

void remove_dead_expressions(Kernel& k) {
  std::vector<bool> live(k.body.size(), false);
  for (const LoopVar& v : k.vars) live[v.extent] = true;
  for (size_t i = k.body.size(); i-- > 0;) {
    const Expr& e = k.body[i];
    live[i] = live[i] || e.op == ScalarOp::kStore || e.op == ScalarOp::kCheck || e.op == ScalarOp::kReduce;
    if (!live[i]) continue;
    for (int operand : {e.a, e.b, e.c})
      if (operand >= 0) live[operand] = true;
  }
  std::vector<int> index(k.body.size(), -1);
  std::vector<Expr> kept;
  for (size_t i = 0; i < k.body.size(); ++i) {
    if (!live[i]) continue;
    Expr e = k.body[i];
    remap_operands(e, index);
    index[i] = static_cast<int>(kept.size());
    kept.push_back(e);
  }
  k.body = std::move(kept);
  for (LoopVar& v : k.vars) v.extent = index[v.extent];
}

// The builder's interning (KernelBuilder::intern) run again: the first of equal expressions stands for all.
void share_equal_expressions(Kernel& k) {
  using Key = std::tuple<int, int, int, int, int, int, int, int, int, int64_t, int64_t>;
  std::map<Key, int> first;
  std::vector<int> index(k.body.size());
  for (size_t i = 0; i < k.body.size(); ++i) {
    Expr& e = k.body[i];
    remap_operands(e, index);
    index[i] = static_cast<int>(i);
    if (e.op == ScalarOp::kStore) continue;
    // Index arithmetic in either order is the same integer (floats keep their order: max(-0, +0) differs).
    const bool either_order = (e.op == ScalarOp::kAdd || e.op == ScalarOp::kMul) && c10::isIntegralType(e.dtype, false);
    const int a = either_order ? std::min(e.a, e.b) : e.a, b = either_order ? std::max(e.a, e.b) : e.b;
    const Key key{static_cast<int>(e.op),     static_cast<int>(e.dtype),       a,       b, e.c, e.var, e.buffer, e.loop,
                  static_cast<int>(e.reduce), std::bit_cast<int64_t>(e.value), e.ivalue};
    index[i] = first.emplace(key, static_cast<int>(i)).first->second;
  }
  for (LoopVar& v : k.vars) v.extent = index[v.extent];
}

}  // namespace jitc::inductor
