// Rebuilds a graph keeping a subset of its nodes, renumbering values densely in topological order and
// redirecting uses through `replace` (old value -> value that stands for it). Shared by DCE and CSE.
#pragma once
#include "graph/graph.h"

#include <vector>

namespace jitc::graph {

Graph rebuild(const Graph& graph, const std::vector<bool>& keep_node, const std::vector<ValueId>& replace);

}  // namespace jitc::graph
