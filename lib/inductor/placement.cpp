#include "inductor/placement.h"

#include <algorithm>

namespace jitc::inductor {

Placement place(const Kernel& k) {
  Placement p;
  p.scope.assign(k.body.size(), Scope::kEntry);
  p.loop.assign(k.body.size(), -1);
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    Scope s = Scope::kEntry;
    int loop = -1;
    for (int operand : {e.a, e.b, e.c}) {
      if (operand < 0) continue;
      if (k.body[operand].op == ScalarOp::kReduce) {  // a reduction's result is a row value
        s = std::max(s, Scope::kRow);
        continue;
      }
      if (p.scope[operand] == Scope::kReduction) loop = p.loop[operand];
      s = std::max(s, p.scope[operand]);
    }
    if (e.op == ScalarOp::kVar) {
      const LoopVar& v = k.vars[e.var];
      s = v.kind == LoopVar::Kind::kOuter ? Scope::kRow : v.kind == LoopVar::Kind::kInner ? Scope::kElement : Scope::kReduction;
      loop = v.loop;
    }
    if (e.op == ScalarOp::kReduce) {  // placed in its loop; its value is read after the loop
      s = Scope::kReduction;
      loop = e.loop;
    }
    if (e.op == ScalarOp::kStore && s < Scope::kRow) s = Scope::kRow;
    if (e.op == ScalarOp::kLoad && s == Scope::kEntry) s = Scope::kRow;  // a buffer is read per call
    p.scope[i] = s;
    p.loop[i] = loop;
  }
  return p;
}

}  // namespace jitc::inductor
