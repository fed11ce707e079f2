#include "graph/partition.h"

#include "graph/renumber.h"

#include <jitc/errors.h>

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <set>

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
std::vector<bool> saved_values(const JointGraph& joint, const std::vector<bool>& is_tangent_value) {
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
  return saved;
}

bool recomputable_op(const Node& n) {
  return n.op.hasTag(at::Tag::pointwise) && !n.mutates && !n.checked() && !n.op.hasTag(at::Tag::nondeterministic_seeded) &&
         n.outputs.size() == 1 && n.outputs[0].values.size() == 1 &&
         std::none_of(n.args.begin(), n.args.end(), [](const Arg& a) { return !a.list.empty(); });
}

// Backward ops whose result jumps where an operand crosses a value: a comparison, or a gradient that
// selects by its input's sign or range. amax's gradient tests `self == result`: a self recomputed by the
// backward in other rounding (a vector libm call where the forward's kernel took the scalar one) no
// longer equals the result the forward saved, and the gradient of the maximum is lost.
bool compares_values(const Node& n) {
  static const char* const names[] = {"aten::eq",
                                      "aten::ne",
                                      "aten::lt",
                                      "aten::le",
                                      "aten::gt",
                                      "aten::ge",
                                      "aten::sign",
                                      "aten::sgn",
                                      "aten::threshold_backward",
                                      "aten::hardtanh_backward",
                                      "aten::leaky_relu_backward",
                                      "aten::elu_backward",
                                      "aten::hardswish_backward",
                                      "aten::hardsigmoid_backward",
                                      "aten::softplus_backward",
                                      "aten::rrelu_with_noise_backward"};
  const std::string& name = n.op.operator_name().name;
  return std::any_of(std::begin(names), std::end(names), [&](const char* c) { return name == c; });
}

// Values whose bits a comparing op of the backward depends on (read by it, or by the backward nodes that
// compute what it reads: views, arithmetic): saved as the forward computed them, never recomputed.
std::vector<bool> compared_values(const JointGraph& joint) {
  const Graph& g = *joint.graph;
  std::vector<bool> compared(g.values.size(), false);
  for (size_t i = g.nodes.size(); i-- > joint.forward_nodes;) {
    const Node& n = g.nodes[i];
    bool feeds = compares_values(n);
    for (const auto& o : n.outputs)
      for (ValueId v : o.values) feeds = feeds || compared[v];
    if (feeds) for_each_use(n, [&](ValueId v) { compared[v] = true; });
  }
  return compared;
}

// Whether a forward node after `producer` writes in place into the memory of `v` (a residual `add_`).
bool written_later(const Graph& g, size_t producer, size_t forward_nodes, ValueId v) {
  bool written = false;
  for (size_t i = producer + 1; i < forward_nodes; ++i)
    if (g.nodes[i].mutates)
      for_each_use(g.nodes[i], [&](ValueId a) {
        written = written || a == v || (g.values[v].storage >= 0 && g.values[a].storage == g.values[v].storage);
      });
  return written;
}

// Of the values the backward reads, those a pointwise op computes from forward inputs or other values the
// backward has anyway are recomputed there instead of saved (a simple rule in place of AOTAutograd's
// min-cut): the forward writes fewer tensors and the step holds less memory. Values a comparison reads
// stay saved (compares_values). Inputs read to recompute are saved, which costs nothing (the caller holds
// them). The callable's outputs stay saved (they are written anyway), and so do the values whose memory
// an output shares (the buffer behind a returned view: the caller may write into it through the view, and
// the backward must then raise as eager's does rather than recompute the old contents). Nor is a value
// recomputed whose memory, or an operand's, a later forward node writes in place (a clone of the targets,
// one of them then filled with ignore_index): recomputing would give the contents from before the write.
// Marks `recomputed`; updates `saved`.
std::vector<bool> choose_recomputed(const Graph& g, size_t forward_nodes, std::vector<bool>& saved, const std::vector<bool>& is_input,
                                    const std::vector<bool>& compared) {
  std::vector<bool> recomputed(g.values.size(), false), is_output(g.values.size(), false);
  std::set<int32_t> output_storages;
  for (ValueId v : g.outputs) {
    if (v == kNoValue) continue;
    is_output[v] = true;
    if (g.values[v].storage >= 0) output_storages.insert(g.values[v].storage);
  }
  for (size_t v = 0; v < g.values.size(); ++v) is_output[v] = is_output[v] || output_storages.count(g.values[v].storage) > 0;
  for (size_t i = saved.size(); i-- > 0;) {
    const auto v = static_cast<ValueId>(i);
    if (!saved[v] || is_output[v] || compared[v] || g.values[v].producer < 0) continue;
    const auto producer = static_cast<size_t>(g.values[v].producer);
    const Node& n = g.nodes[producer];
    if (!recomputable_op(n) || written_later(g, producer, forward_nodes, v)) continue;
    bool available = true;
    for_each_use(n, [&](ValueId a) {
      available = available && (is_input[a] || saved[a] || recomputed[a]) && !written_later(g, producer, forward_nodes, a);
    });
    if (!available) continue;
    saved[v] = false;
    recomputed[v] = true;
    for_each_use(n, [&](ValueId a) {
      if (is_input[a]) saved[a] = true;
    });
  }
  return recomputed;
}

std::vector<ValueId> listed(const std::vector<bool>& mask) {
  std::vector<ValueId> out;
  for (size_t v = 0; v < mask.size(); ++v)
    if (mask[v]) out.push_back(static_cast<ValueId>(v));
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

// Appends a copy of joint node `i` reading through `map`; its outputs become new values.
void copy_node(const Graph& g, size_t i, std::vector<ValueId>& map, Graph& b) {
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

// The recomputed forward nodes, then the backward nodes, over fresh inputs: the saved values, then the
// tangents.
Graph backward_graph(const JointGraph& joint, const std::vector<ValueId>& saved, const std::vector<ValueId>& recomputed) {
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
  for (ValueId v : recomputed) copy_node(g, static_cast<size_t>(g.values[v].producer), map, b);
  for (size_t i = joint.forward_nodes; i < g.nodes.size(); ++i) copy_node(g, i, map, b);
  for (ValueId v : joint.input_grads) {
    if (v != kNoValue && map[v] == kNoValue) throw InternalError("partition: a gradient is neither saved nor computed by the backward");
    b.outputs.push_back(v == kNoValue ? kNoValue : map[v]);
  }
  return b;
}

}  // namespace

namespace {

// Batch norm's backward in training mode takes the running statistics but does not read them; the
// forward updates them in place, so keeping them would save inputs the forward overwrites (and the
// compiled Function would then raise, as eager's SavedVariable would for a saved tensor that changed).
void forget_running_statistics(Graph& g, size_t forward_nodes) {
  for (size_t i = forward_nodes; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    const std::string& name = n.op.operator_name().name;
    const bool native =
        name == "aten::native_batch_norm_backward" && n.args.size() > 7 && n.args[7].constant.isBool() && n.args[7].constant.toBool();
    if (!native && name != "aten::cudnn_batch_norm_backward" && name != "aten::miopen_batch_norm_backward") continue;
    for (size_t a : {3, 4}) {
      n.args[a].kind = Arg::Kind::kConstant;
      n.args[a].value = kNoValue;
      n.args[a].constant = c10::IValue();
    }
  }
}

bool is_number(const Arg& a) {
  return a.kind == Arg::Kind::kConstant && a.symbolic.empty() && (a.constant.isInt() || a.constant.isDouble());
}
double number(const Arg& a) { return a.constant.toScalar().toDouble(); }
bool same_number(const Arg& a, const Arg& b) { return is_number(a) && is_number(b) && number(a) == number(b); }

// The forward node applying `op` to `input` with the constants of `backward`'s args [first, first + count)
// as its args [1, 1 + count); -1 when there is none.
int32_t forward_activation(const Graph& g, size_t forward_nodes, const char* op, ValueId input, const Node& backward, size_t first,
                           size_t count) {
  for (size_t i = 0; i < forward_nodes; ++i) {
    const Node& f = g.nodes[i];
    if (f.op.operator_name().name != op || f.args.size() < 1 + count || f.args[0].kind != Arg::Kind::kValue || f.args[0].value != input)
      continue;
    bool same = f.outputs.size() == 1 && f.outputs[0].values.size() == 1;
    for (size_t k = 0; k < count; ++k) same = same && same_number(f.args[1 + k], backward.args[first + k]);
    if (same) return static_cast<int32_t>(i);
  }
  return -1;
}

// hardtanh's (ReLU6's) gradient passes where its input lies strictly inside (min, max), and so does its
// output: a clamped value sits on a bound, NaN stays NaN. The backward reads the output then, which it
// usually has anyway (the next layer's input), where eager saves the input too: one activation fewer saved
// per ReLU6 (MobileNetV2: each batch norm's output before one). leaky_relu with a slope >= 0 alike (x > 0
// iff y > 0; eager's in-place form reads its result so). Not where the caller gets the output or a view of
// it, or where the forward writes into it later: a write would change a saved value that eager never saved.
void read_activation_outputs(Graph& g, size_t forward_nodes) {
  std::set<int32_t> returned_storages;
  for (ValueId v : g.outputs)
    if (v != kNoValue) returned_storages.insert(g.values[v].storage);
  auto returned = [&](ValueId v) {
    return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end() ||
           (g.values[v].storage >= 0 && returned_storages.count(g.values[v].storage));
  };
  for (size_t i = forward_nodes; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    const std::string& name = n.op.operator_name().name;
    if (n.args.size() != 4 || n.args[1].kind != Arg::Kind::kValue) continue;
    const bool hardtanh =
        name == "aten::hardtanh_backward" && is_number(n.args[2]) && is_number(n.args[3]) && number(n.args[2]) < number(n.args[3]);
    const bool leaky = name == "aten::leaky_relu_backward" && is_number(n.args[2]) && number(n.args[2]) >= 0 &&
                       n.args[3].constant.isBool() && !n.args[3].constant.toBool();
    if (!hardtanh && !leaky) continue;
    const int32_t f = hardtanh ? forward_activation(g, forward_nodes, "aten::hardtanh", n.args[1].value, n, 2, 2)
                               : forward_activation(g, forward_nodes, "aten::leaky_relu", n.args[1].value, n, 2, 1);
    if (f < 0) continue;
    const ValueId output = g.nodes[static_cast<size_t>(f)].outputs[0].values[0];
    if (returned(output) || written_later(g, static_cast<size_t>(f), forward_nodes, output)) continue;
    n.args[1].value = output;
    if (leaky) n.args[3].constant = true;  // self_is_result
  }
}

}  // namespace

SplitGraphs split_joint(const JointGraph& traced) {
  Graph joint_graph = *traced.graph;
  forget_running_statistics(joint_graph, traced.forward_nodes);
  read_activation_outputs(joint_graph, traced.forward_nodes);
  JointGraph joint = traced;
  joint.graph = &joint_graph;
  const Graph& g = joint_graph;
  std::vector<bool> is_tangent_value(g.values.size(), false);
  for (size_t t : joint.tangents) is_tangent_value[g.inputs[t].value] = true;
  for (size_t i = 0; i < joint.forward_nodes; ++i)
    for_each_use(g.nodes[i], [&](ValueId v) {
      if (is_tangent_value[v]) throw InternalError("partition: a forward node reads a tangent");
    });
  std::vector<bool> saved_mask = saved_values(joint, is_tangent_value);
  std::vector<bool> is_input(g.values.size(), false);
  for (const auto& in : g.inputs) is_input[in.value] = !is_tangent_value[in.value];
  // An input the forward writes in place (a buffer) holds other data by the time the backward runs:
  // nothing is recomputed from it.
  for (size_t i = 0; i < joint.forward_nodes; ++i)
    if (g.nodes[i].mutates)
      for (const auto& in : g.inputs)
        for_each_use(g.nodes[i], [&](ValueId a) {
          if (g.values[a].storage == g.values[in.value].storage) is_input[in.value] = false;
        });
  const std::vector<ValueId> recomputed = listed(choose_recomputed(g, joint.forward_nodes, saved_mask, is_input, compared_values(joint)));
  const std::vector<ValueId> saved = listed(saved_mask);
  SplitGraphs out;
  out.forward = forward_graph(joint, saved, is_tangent_value);
  out.backward = backward_graph(joint, saved, recomputed);
  out.saved = saved.size();
  out.recomputed = recomputed.size();
  return out;
}

}  // namespace jitc::graph
