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
  // native_batch_norm and cudnn/miopen_batch_norm are what the composite batch_norm becomes where
  // autograd runs above the tracer (training traces).
  return name == "aten::instance_norm" || name == "aten::batch_norm" || name == "aten::_batch_norm_impl_index" ||
         name == "aten::native_batch_norm" || name == "aten::cudnn_batch_norm" || name == "aten::miopen_batch_norm";
}

bool writes_unannotated(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args) {
  // All three take (input, weight, bias, running_mean, running_var, training/use_input_stats, ...) and
  // update the running statistics only in training mode, when they are given.
  return writes_unannotated(op) && args.size() > 5 && args[5].isBool() && args[5].toBool() && args[3].isTensor() &&
         args[3].toTensor().defined();
}

int Graph::break_count() const {
  int n = 0;
  for (const auto& node : nodes) n += node.kind == NodeKind::kBreak;
  return n;
}

int Graph::op_count() const { return static_cast<int>(nodes.size()); }

}  // namespace jitc::graph
