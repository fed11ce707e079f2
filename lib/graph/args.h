// Node arguments built by graph passes that add or rewrite nodes (functionalization, decompositions,
// group-norm statistics).
#pragma once
#include "graph/graph.h"

namespace jitc::graph {

inline Arg value_arg(ValueId v) {
  Arg a;
  a.kind = Arg::Kind::kValue;
  a.value = v;
  return a;
}

inline Arg constant_arg(c10::IValue v) {
  Arg a;
  a.kind = Arg::Kind::kConstant;
  a.constant = std::move(v);
  return a;
}

// A constant argument equal to 1 (an int, a double or a Scalar of either): addmm's beta and alpha.
inline bool is_one(const Arg& a) {
  return a.kind == Arg::Kind::kConstant &&
         ((a.constant.isInt() && a.constant.toInt() == 1) || (a.constant.isDouble() && a.constant.toDouble() == 1.0));
}

}  // namespace jitc::graph
