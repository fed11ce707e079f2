// The iteration space of a kernel the scheduler fills: rows over `outer`, an element loop over `inner`.
#pragma once
#include "graph/sym_expr.h"

#include <string>
#include <vector>

namespace jitc::inductor {

// `dims` gives the value dim of each loop, outer then inner, when the loops are not in dim order (empty:
// in order).
struct Space {
  graph::SymShape outer, inner;
  std::vector<size_t> dims;
  std::string text() const { return graph::to_string(outer) + " x " + graph::to_string(inner); }
  // The sizes of a value computed one element per iteration, in the value's dim order.
  graph::SymShape value_sizes() const {
    graph::SymShape loops = outer;
    loops.insert(loops.end(), inner.begin(), inner.end());
    if (dims.empty()) return loops;
    graph::SymShape sizes(loops.size());
    for (size_t l = 0; l < loops.size(); ++l) sizes[dims[l]] = loops[l];
    return sizes;
  }
  size_t dim_of_loop(size_t l) const { return dims.empty() ? l : dims[l]; }
};

}  // namespace jitc::inductor
