// Rebuilds a graph keeping a subset of its nodes, renumbering values densely in topological order and
// redirecting uses through `replace` (old value -> value that stands for it). Shared by DCE, CSE and the
// inductor's graph passes.
#pragma once
#include "graph/graph.h"

#include <vector>

namespace jitc::graph {

Graph rebuild(const Graph& graph, const std::vector<bool>& keep_node, const std::vector<ValueId>& replace);
// Keeps every use as it is (DCE).
Graph rebuild(const Graph& graph, const std::vector<bool>& keep_node);
// Every node kept: values appended by a graph pass take their place in node order.
Graph renumbered(const Graph& graph);

}  // namespace jitc::graph
