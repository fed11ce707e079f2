#include "inductor/frozen_weights.h"

#include "inductor/graph_uses.h"

#include <algorithm>

namespace jitc::inductor {

FrozenInputs::FrozenInputs(const graph::Graph& g) : g_(g) {
  // Conservatively: every tensor a mutating node takes.
  for (const graph::Node& n : g.nodes)
    if (n.mutates)
      for (graph::ValueId v : node_tensor_args(n)) written_.insert(g.values[v].storage);
}

bool FrozenInputs::frozen(const graph::Arg& a, size_t rank) const {
  if (a.kind != graph::Arg::Kind::kValue) return false;
  const graph::Value& v = g_.values[a.value];
  if (v.producer >= 0 || written_.count(v.storage) > 0) return false;
  const auto input = std::find_if(g_.inputs.begin(), g_.inputs.end(), [&](const graph::Input& in) { return in.value == a.value; });
  if (input == g_.inputs.end() || input->kind == graph::InputKind::kArgument) return false;
  // An inference tensor (made under c10::InferenceMode) has no version counter: a value derived from it
  // would have to be derived again on every call, which costs more than what it saves (a 3-layer MLP
  // ran many times slower than eager). Its guard fixes its identity, so it stays one for the entry's life.
  if (input->kind == graph::InputKind::kCaptured) {
    const auto held = input->captured.lock();
    if (!held || held->is_inference()) return false;
  }
  const graph::TensorMeta& m = v.meta;
  return m.dtype == c10::kFloat && m.device.is_cpu() && m.sizes.size() == rank && graph::constant_values(m.sizes).has_value();
}

bool is_none(const graph::Arg& a) {
  return a.kind == graph::Arg::Kind::kConstant && (a.constant.isNone() || (a.constant.isTensor() && !a.constant.toTensor().defined()));
}

graph::ValueId emit_derived(Emitter& e, const char* name, const char* overload, std::vector<graph::Arg> args, std::vector<int64_t> sizes) {
  const graph::ValueId v = e.call(name, overload, std::move(args), c10::kFloat, std::move(sizes));
  e.last().kind = graph::NodeKind::kDerived;
  return v;
}

}  // namespace jitc::inductor
