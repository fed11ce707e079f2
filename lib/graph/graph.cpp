#include "graph/graph.h"

namespace jitc::graph {

std::string Node::name() const {
  const auto& n = op.operator_name();
  return n.overload_name.empty() ? n.name : n.name + "." + n.overload_name;
}

int Graph::break_count() const {
  int n = 0;
  for (const auto& node : nodes) n += node.kind == NodeKind::kBreak;
  return n;
}

int Graph::op_count() const { return static_cast<int>(nodes.size()); }

}  // namespace jitc::graph
