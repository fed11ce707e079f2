// functionalize: rewrites a recorded graph (in-place ops, views, writes through views) into a graph
// whose body has no mutation, followed by an epilogue:
//   - aten::copy_ of the final value into each argument or captured tensor the callable wrote;
//   - view ops on those inputs for results that alias an input (so the caller gets a real view).
// In-place ops become their out-of-place variants (add_ -> add, cast back to the target's dtype);
// a write through a view becomes the view's scatter (slice_scatter, select_scatter, diagonal_scatter,
// as_strided_scatter, or the inverse reshape/permute), and later reads of any alias of that memory are
// regenerated from the updated base. This is what a code generator needs: values, no aliasing.
//
// Works on concrete graphs (before generalize): new values get exact metadata by running their op on
// meta tensors. Returns nullopt, with the reason, for what it cannot rewrite: out= variants, writes into
// tensor lists or through non-invertible views (expand, split, unbind), arguments aliasing each other.
#pragma once
#include "graph/graph.h"

#include <optional>
#include <string>

namespace jitc::graph {

std::optional<Graph> functionalize(const Graph& graph, std::string* why_not);

// True if no node before the epilogue writes to a tensor (the epilogue's copy_ nodes are last).
bool is_functional(const Graph& graph);

}  // namespace jitc::graph
