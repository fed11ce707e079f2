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

}  // namespace jitc::graph
