// The elements of list views (split, chunk, unbind) as the single views that make them, so that
// functionalization can rebuild them and scatter writes through them.
#pragma once
#include "graph/graph.h"

#include <optional>

namespace jitc::graph {

// Element k of `list_view`'s list output as slice(base, dim, start, end) or select(base, dim, k); nullopt
// where the dim or the sizes are not static, or for other list views.
std::optional<Node> element_view(const Graph& raw, const Node& list_view, size_t k);

}  // namespace jitc::graph
