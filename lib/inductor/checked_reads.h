// Values that must be computed whole because their kernels check something at run time. A value whose
// loader checks (an index read from a tensor lies in range, an integer divisor is not 0) is checked at
// the elements its readers compute: inlined into a node that reads only part of it (a slice, a select,
// a window, another index), a bad index or a zero divisor among the other elements would go unreported
// where eager, which computes every element, raises. Such a value is stored instead: its own kernel
// computes, and checks, every element.
#pragma once
#include "graph/graph.h"

#include <functional>
#include <vector>

namespace jitc::inductor {

// In value order: values that carry a check (`checks`, or computed inline from a value that carries one)
// and that a lowered node reads only in part. `inlined(v)`: v is computed inside its readers' kernels (a
// lowered value not stored); `lowered(i)`: node i runs in generated kernels (an extern call reads whole
// buffers).
std::vector<graph::ValueId> checked_values_read_in_part(const graph::Graph& g, const std::vector<char>& checks,
                                                        const std::function<bool(graph::ValueId)>& inlined,
                                                        const std::function<bool(size_t)>& lowered);

}  // namespace jitc::inductor
