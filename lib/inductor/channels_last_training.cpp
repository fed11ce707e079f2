// Channels-last layouts in training graphs (channels_last.h): the saved values chosen when the joint graph
// is split, then kept to by the forward's and the backward's last graph stages.
#include "inductor/channels_last.h"

#include "graph/renumber.h"
#include "inductor/graph_uses.h"
#include "inductor/lowering.h"

#include <ATen/Context.h>

#include <algorithm>
#include <map>
#include <set>

namespace jitc::inductor {

namespace {

using graph::Graph;
using graph::Node;
using graph::TensorMeta;
using graph::ValueId;

bool mkldnn_enabled() { return at::hasMKLDNN() && at::globalContext().userEnabledMkldnn(); }

bool is_view(const Node& n) {
  const auto& returns = n.op.schema().returns();
  return std::any_of(returns.begin(), returns.end(), [](const c10::Argument& r) { return r.alias_info() != nullptr; }) ||
         is_view_lowering(n);
}

bool is_channels_last(const TensorMeta& m) { return m.strides == channels_last_strides(m.sizes); }

// A float32 4-D CPU tensor whose channels, height and width are constant: its channels-last strides do not
// depend on the batch, which may be symbolic (a training entry generalized over batch sizes).
bool relayable(const TensorMeta& m) {
  if (m.sizes.size() != 4 || m.dtype != c10::kFloat || !m.device.is_cpu()) return false;
  return m.sizes[1].is_constant() && m.sizes[2].is_constant() && m.sizes[3].is_constant();
}

// aten::convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups) of a
// 2-D, not transposed, on static float32 CPU tensors.
bool planar_convolution(const Graph& g, const Node& n) {
  if (n.op.operator_name().name != "aten::convolution" || n.args.size() != 9 || n.outputs.size() != 1 || n.outputs[0].values.size() != 1)
    return false;
  for (size_t a : {0, 1})
    if (n.args[a].kind != graph::Arg::Kind::kValue || !static_float_4d_cpu(g.values[n.args[a].value].meta)) return false;
  const c10::IValue& transposed = n.args[6].constant;
  return transposed.isBool() && !transposed.toBool() && static_float_4d_cpu(g.values[n.outputs[0].values[0]].meta);
}

// Whether the graph's planar convolutions read at least as many activation elements as weight elements,
// summed over them (a training graph's layout is one for all its values). MobileNetV2's training step at
// [8, 3, 64, 64] (ratio 2.0) was much faster channels-last, ResNet-18's (ratio 0.13: its late layers'
// weights dominate) slower (benchmarks/RESULTS.md, session 30).
bool activations_outweigh_weights(const Graph& g) {
  int64_t activations = 0, weights = 0;
  for (const Node& n : g.nodes)
    if (planar_convolution(g, n)) {
      activations += graph::constant_numel(g.values[n.args[0].value].meta.sizes).value_or(0);
      weights += graph::constant_numel(g.values[n.args[1].value].meta.sizes).value_or(0);
    }
  return weights > 0 && activations >= weights;
}

// Where a value's layout is its metadata's alone: computed by a node that is no view and writes nothing
// (kernels store it through its strides; an extern's result is copied to them, eager_replay.h), in
// memory of its own, read only by ops that are no views (they read it through its strides), and not one
// of the callable's results (which keep eager's layout).
class FreeLayouts {
 public:
  FreeLayouts(const Graph& g, size_t results) : g_(g), readers_(readers_by_value(g)), sharers_(values_per_storage(g)) {
    results_.insert(g.outputs.begin(), g.outputs.begin() + static_cast<std::ptrdiff_t>(results));
  }

  bool free(ValueId v) const {
    const graph::Value& value = g_.values[v];
    if (value.producer < 0 || !relayable(value.meta) || results_.count(v)) return false;
    if (value.storage >= 0 && sharers_.at(value.storage) > 1) return false;
    const Node& producer = g_.nodes[value.producer];
    if (producer.mutates || is_view(producer)) return false;
    return std::none_of(readers_[v].begin(), readers_[v].end(), [&](int u) { return is_view(g_.nodes[u]); });
  }

 private:
  const Graph& g_;
  std::vector<std::vector<int>> readers_;
  std::unordered_map<int32_t, int> sharers_;
  std::set<ValueId> results_;
};

}  // namespace

std::vector<size_t> lay_out_saved_channels_last(const Graph& forward, size_t saved, Graph& backward) {
  std::vector<size_t> chosen;
  if (!mkldnn_enabled() || saved == 0 || backward.inputs.size() < saved) return chosen;
  if (!activations_outweigh_weights(forward)) return chosen;
  const size_t first_saved = forward.outputs.size() - saved;
  const std::set<ValueId> results(forward.outputs.begin(), forward.outputs.begin() + static_cast<std::ptrdiff_t>(first_saved));
  const auto readers = readers_by_value(backward);
  for (size_t k = 0; k < saved; ++k) {
    const ValueId v = forward.outputs[first_saved + k], b = backward.inputs[k].value;
    if (forward.values[v].producer < 0 || results.count(v)) continue;
    if (!relayable(backward.values[b].meta) || backward.values[b].meta.sizes != forward.values[v].meta.sizes) continue;
    if (std::any_of(readers[b].begin(), readers[b].end(), [&](int u) { return is_view(backward.nodes[u]); })) continue;
    backward.values[b].meta.strides = channels_last_strides(backward.values[b].meta.sizes);
    chosen.push_back(k);
  }
  return chosen;
}

// Each chosen saved value is stored channels-last where its layout is free, else a channels-last clone of
// it is saved instead (made right after it); every other free 4-D value is computed channels-last too.
Graph forward_in_channels_last(const Graph& forward, size_t saved, const std::vector<size_t>& indices) {
  if (indices.empty()) return forward;
  const size_t first_saved = forward.outputs.size() - saved;
  const FreeLayouts layouts(forward, first_saved);
  Graph r = forward;
  std::map<int32_t, std::vector<size_t>> cloned_after;  // producer -> output positions
  for (size_t k : indices) {
    const size_t position = first_saved + k;
    const ValueId v = forward.outputs[position];
    if (!relayable(forward.values[v].meta) || is_channels_last(forward.values[v].meta)) continue;
    if (layouts.free(v)) r.values[v].meta.strides = channels_last_strides(forward.values[v].meta.sizes);
    else cloned_after[forward.values[v].producer].push_back(position);
  }
  for (ValueId v = 0; v < static_cast<ValueId>(forward.values.size()); ++v)
    if (layouts.free(v) && !is_channels_last(forward.values[v].meta))
      r.values[v].meta.strides = channels_last_strides(forward.values[v].meta.sizes);
  if (cloned_after.empty()) return r;
  int32_t next_storage = 0;
  for (const auto& v : forward.values) next_storage = std::max(next_storage, v.storage + 1);
  std::vector<Node> nodes;
  auto clone_outputs = [&](int32_t producer) {
    if (auto it = cloned_after.find(producer); it != cloned_after.end())
      for (size_t position : it->second)
        r.outputs[position] = append_channels_last_clone(r, nodes, forward.outputs[position], next_storage++);
  };
  clone_outputs(-1);
  for (size_t i = 0; i < forward.nodes.size(); ++i) {
    nodes.push_back(forward.nodes[i]);
    clone_outputs(static_cast<int32_t>(i));
  }
  r.nodes = std::move(nodes);
  return graph::renumbered(r);
}

// Where a convolution_backward reads a channels-last input (oneDNN then computes in that layout), every
// free 4-D value of the backward is computed channels-last: the gradients it reads and returns among them.
Graph backward_in_channels_last(const Graph& backward) {
  if (!mkldnn_enabled()) return backward;
  const bool reads_channels_last = std::any_of(backward.nodes.begin(), backward.nodes.end(), [&](const Node& n) {
    return n.op.operator_name().name == "aten::convolution_backward" && n.args.size() > 1 && n.args[1].kind == graph::Arg::Kind::kValue &&
           relayable(backward.values[n.args[1].value].meta) && is_channels_last(backward.values[n.args[1].value].meta);
  });
  if (!reads_channels_last) return backward;
  const FreeLayouts layouts(backward, backward.outputs.size());
  Graph r = backward;
  for (ValueId v = 0; v < static_cast<ValueId>(backward.values.size()); ++v)
    if (layouts.free(v) && !is_channels_last(backward.values[v].meta))
      r.values[v].meta.strides = channels_last_strides(backward.values[v].meta.sizes);
  return r;
}

}  // namespace jitc::inductor
