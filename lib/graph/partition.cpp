#include "graph/partition.h"

#include "graph/renumber.h"

#include <jitc/errors.h>

#include <algorithm>

namespace jitc::graph {

namespace {

template <class F>
void for_each_use(const Node& n, F&& f) {
  for (const auto& a : n.args) {
    if (a.kind == Arg::Kind::kValue) f(a.value);
    for (ValueId v : a.list)
      if (v != kNoValue) f(v);
  }
}

// Forward values (forward node outputs and non-tangent inputs) that the backward reads, in value order.
std::vector<ValueId> saved_values(const JointGraph& joint, const std::vector<bool>& is_tangent_value) {
  const Graph& g = *joint.graph;
  std::vector<bool> saved(g.values.size(), false);
  auto forward_side = [&](ValueId v) {
    const int32_t producer = g.values[v].producer;
    return producer >= 0 ? static_cast<size_t>(producer) < joint.forward_nodes : !is_tangent_value[v];
  };
  auto note = [&](ValueId v) {
    if (forward_side(v)) saved[v] = true;
  };
  for (size_t i = joint.forward_nodes; i < g.nodes.size(); ++i) for_each_use(g.nodes[i], note);
  for (ValueId v : joint.input_grads)
    if (v != kNoValue) note(v);
  std::vector<ValueId> out;
  for (size_t v = 0; v < saved.size(); ++v)
    if (saved[v]) out.push_back(static_cast<ValueId>(v));
  return out;
}

Graph forward_graph(const JointGraph& joint, const std::vector<ValueId>& saved, const std::vector<bool>& is_tangent_value) {
  Graph g = *joint.graph;
  g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(joint.forward_nodes), g.nodes.end());
  g.inputs.erase(std::remove_if(g.inputs.begin(), g.inputs.end(), [&](const Input& in) { return is_tangent_value[in.value]; }),
                 g.inputs.end());
  g.outputs.insert(g.outputs.end(), saved.begin(), saved.end());
  return rebuild(g, std::vector<bool>(g.nodes.size(), true));
}

// The backward nodes over fresh inputs: the saved values, then the tangents.
Graph backward_graph(const JointGraph& joint, const std::vector<ValueId>& saved) {
  const Graph& g = *joint.graph;
  Graph b;
  b.num_symbols = g.num_symbols;
  std::vector<ValueId> map(g.values.size(), kNoValue);
  auto add_input = [&](ValueId old, std::string name) {
    Value v = g.values[old];
    v.producer = -1;
    b.values.push_back(std::move(v));
    map[old] = static_cast<ValueId>(b.values.size() - 1);
    Input in;
    in.kind = InputKind::kArgument;
    in.value = map[old];
    in.leaf = static_cast<int>(b.inputs.size());
    in.name = std::move(name);
    in.owned = true;  // the compiled Function hands them over (training.cpp)
    b.inputs.push_back(std::move(in));
  };
  for (size_t k = 0; k < saved.size(); ++k) add_input(saved[k], "saved[" + std::to_string(k) + "]");
  for (size_t t : joint.tangents) add_input(g.inputs[t].value, g.inputs[t].name);
  for (size_t i = joint.forward_nodes; i < g.nodes.size(); ++i) {
    Node n = g.nodes[i];
    for (auto& a : n.args) {
      if (a.kind == Arg::Kind::kValue) a.value = map[a.value];
      for (auto& v : a.list) v = v == kNoValue ? kNoValue : map[v];
    }
    const auto index = static_cast<int32_t>(b.nodes.size());
    for (auto& o : n.outputs)
      for (auto& v : o.values) {
        Value value = g.values[v];
        value.producer = index;
        b.values.push_back(std::move(value));
        v = map[v] = static_cast<ValueId>(b.values.size() - 1);
      }
    b.nodes.push_back(std::move(n));
  }
  for (ValueId v : joint.input_grads) {
    if (v != kNoValue && map[v] == kNoValue) throw InternalError("partition: a gradient is neither saved nor computed by the backward");
    b.outputs.push_back(v == kNoValue ? kNoValue : map[v]);
  }
  return b;
}

}  // namespace

SplitGraphs split_joint(const JointGraph& joint) {
  const Graph& g = *joint.graph;
  std::vector<bool> is_tangent_value(g.values.size(), false);
  for (size_t t : joint.tangents) is_tangent_value[g.inputs[t].value] = true;
  for (size_t i = 0; i < joint.forward_nodes; ++i)
    for_each_use(g.nodes[i], [&](ValueId v) {
      if (is_tangent_value[v]) throw InternalError("partition: a forward node reads a tangent");
    });
  const std::vector<ValueId> saved = saved_values(joint, is_tangent_value);
  SplitGraphs out;
  out.forward = forward_graph(joint, saved, is_tangent_value);
  out.backward = backward_graph(joint, saved);
  out.saved = saved.size();
  return out;
}

}  // namespace jitc::graph
