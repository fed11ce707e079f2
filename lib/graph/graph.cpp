#include "graph/graph.h"

namespace jitc::graph {

std::string Node::name() const {
  const auto& n = op.operator_name();
  return n.overload_name.empty() ? n.name : n.name + "." + n.overload_name;
}

bool writes_unannotated(const c10::OperatorHandle& op) {
  // Of the ops tagged maybe_aliasing_or_mutating, these write (the rest only may alias, which storage
  // identity from the trace already tells).
  const auto& name = op.operator_name().name;
  return name == "aten::instance_norm" || name == "aten::batch_norm" || name == "aten::_batch_norm_impl_index";
}

int Graph::break_count() const {
  int n = 0;
  for (const auto& node : nodes) n += node.kind == NodeKind::kBreak;
  return n;
}

int Graph::op_count() const { return static_cast<int>(nodes.size()); }

}  // namespace jitc::graph
