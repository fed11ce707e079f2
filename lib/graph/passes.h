// Graph-level passes and views of a Graph. Each is one function in its own file.
#pragma once
#include "graph/graph.h"

#include <optional>
#include <string>

namespace jitc::graph {

// Canonical text: values numbered in topological order. Golden tests and cache keys use it.
std::string to_text(const Graph& graph);  // printer.cpp

// Graphviz DOT of the graph (JITC_DEBUG_DIR).
std::string to_dot(const Graph& graph);  // dot.cpp

// Checks SSA order, value/producer links, argument kinds. Throws jitc::InternalError naming the node.
void verify(const Graph& graph);  // verifier.cpp

// Removes nodes whose results are unused. Keeps mutations, graph breaks and RNG ops (they consume
// the generator as eager does).
Graph eliminate_dead_code(const Graph& graph);  // dce.cpp

// Merges identical pure, non-view nodes on identical inputs.
Graph eliminate_common_subexpressions(const Graph& graph);  // cse.cpp

// True if two constant arguments are the same value (tensors and generators by identity).
bool same_constant(const c10::IValue& a, const c10::IValue& b);  // constants.cpp

// Short dtype name used in text: f32, bf16, i64, b8...
const char* dtype_name(c10::ScalarType dtype);  // printer.cpp

}  // namespace jitc::graph
