#include "inductor/frozen_weights.h"

#include "graph/args.h"
#include "graph/passes.h"
#include "inductor/channels_last.h"
#include "inductor/graph_uses.h"

#include <ATen/Context.h>

#include <algorithm>
#include <string>
#include <vector>

namespace jitc::inductor {

namespace {

using graph::Arg;
using graph::Graph;
using graph::Node;
using graph::TensorMeta;
using graph::ValueId;

// conv2d(input, weight, bias?, stride, padding, dilation, groups)
enum ConvolutionArg { kInput, kWeight, kBias, kStride, kPadding, kDilation, kGroups };
// batch_norm(input, weight?, bias?, running_mean, running_var, training, momentum, eps, cudnn_enabled)
enum BatchNormArg { kNormInput, kGamma, kBeta, kMean, kVar, kTraining, kMomentum, kEps };

bool is_op(const Node& n, const char* name) {
  return n.op.operator_name().name == name && n.op.operator_name().overload_name.empty() && !n.mutates;
}

bool channels_last(const TensorMeta& m) { return static_float_4d_cpu(m) && m.strides == channels_last_strides(m.sizes); }

// An int[2] argument as two values (conv2d accepts one for both dims).
c10::IValue pair(const Arg& a) {
  std::vector<int64_t> v = a.constant.toIntVector();
  if (v.size() == 1) v.push_back(v[0]);
  return c10::IValue(v);
}

class Freezing {
 public:
  explicit Freezing(const Graph& g) : g_(g), users_(readers_by_value(g)), inputs_(g) {}

  bool prepackable(const Node& n) const {
    if (!is_op(n, "aten::conv2d") || n.args.size() != 7 || n.outputs.size() != 1 || n.outputs[0].values.size() != 1) return false;
    if (native_convolution_is_faster(g_, n)) return false;
    return inputs_.frozen(n.args[kWeight], 4) && (is_none(n.args[kBias]) || inputs_.frozen(n.args[kBias], 1));
  }

  // A prepackable convolution whose layout the channels-last pass chose.
  bool applies(const Node& conv) const {
    if (!prepackable(conv) || conv.args[kInput].kind != Arg::Kind::kValue) return false;
    return channels_last(g_.values[conv.args[kInput].value].meta) && channels_last(g_.values[output(conv)].meta);
  }

  // The convolution that batch norm node n folds into, or null.
  const Node* folded_into(const Node& bn) const {
    if (!is_op(bn, "aten::batch_norm") || bn.args.size() != 9 || bn.args[kNormInput].kind != Arg::Kind::kValue) return nullptr;
    const ValueId y = bn.args[kNormInput].value;
    const int producer = g_.values[y].producer;
    if (producer < 0 || !applies(g_.nodes[producer]) || users_[y].size() != 1 || is_graph_output(y)) return nullptr;
    const Arg& training = bn.args[kTraining];
    if (training.kind != Arg::Kind::kConstant || !training.constant.isBool() || training.constant.toBool()) return nullptr;
    if (!bn.args[kEps].symbolic.empty() || !bn.args[kEps].constant.isDouble()) return nullptr;
    for (int a : {kMean, kVar})
      if (!per_channel(bn.args[a], y)) return nullptr;
    for (int a : {kGamma, kBeta})
      if (!is_none(bn.args[a]) && !per_channel(bn.args[a], y)) return nullptr;
    if (g_.values[output(bn)].meta.strides != g_.values[y].meta.strides) return nullptr;
    return &g_.nodes[producer];
  }

  // A convolution that no batch norm folds into.
  bool applies_alone(const Node& conv) const {
    if (!applies(conv)) return false;
    const ValueId y = output(conv);
    return !(users_[y].size() == 1 && folded_into(g_.nodes[users_[y][0]]) == &conv);
  }

  // The prepacked convolution standing for conv (and bn, when not null).
  ValueId emit(Emitter& e, const Node& conv, const Node* bn) const {
    ValueId weight = conv.args[kWeight].value;
    Arg bias = conv.args[kBias];
    if (bn) {
      const auto [w, b] = fold(e, conv, *bn);
      weight = w;
      bias = graph::value_arg(b);
    }
    const std::vector<int64_t> input_sizes = sizes_of(conv.args[kInput].value);
    const Arg padding = graph::constant_arg(pair(conv.args[kPadding])), stride = graph::constant_arg(pair(conv.args[kStride]));
    const Arg dilation = graph::constant_arg(pair(conv.args[kDilation]));
    const ValueId packed =
        emit_derived(e, "mkldnn::_reorder_convolution_weight", "",
                     {graph::value_arg(weight), padding, stride, dilation, conv.args[kGroups], graph::constant_arg(input_sizes)},
                     sizes_of(conv.args[kWeight].value));
    const c10::List<std::optional<c10::Scalar>> no_scalars;
    return e.call("mkldnn::_convolution_pointwise", "",
                  {conv.args[kInput], graph::value_arg(packed), bias, padding, stride, dilation, conv.args[kGroups],
                   graph::constant_arg(std::string("none")), graph::constant_arg(no_scalars), graph::constant_arg(c10::IValue())},
                  g_.values[output(bn ? *bn : conv)].meta);
  }

 private:
  // The weight and bias of conv with batch norm bn folded in, as eager's inference batch norm computes
  // it: scale = gamma / sqrt(var + eps), weight * scale, (bias - mean) * scale + beta.
  std::pair<ValueId, ValueId> fold(Emitter& e, const Node& conv, const Node& bn) const {
    const int64_t c = sizes_of(bn.args[kMean].value)[0];
    const Arg eps = bn.args[kEps], one = graph::constant_arg(int64_t{1});
    auto v = [](ValueId x) { return graph::value_arg(x); };
    const ValueId shifted_var = emit_derived(e, "aten::add", "Scalar", {bn.args[kVar], eps, one}, {c});
    ValueId scale = emit_derived(e, "aten::reciprocal", "", {v(emit_derived(e, "aten::sqrt", "", {v(shifted_var)}, {c}))}, {c});
    if (!is_none(bn.args[kGamma])) scale = emit_derived(e, "aten::mul", "Tensor", {v(scale), bn.args[kGamma]}, {c});
    const ValueId column =
        emit_derived(e, "aten::view", "", {v(scale), graph::constant_arg(std::vector<int64_t>{c, 1, 1, 1})}, {c, 1, 1, 1});
    const ValueId weight = emit_derived(e, "aten::mul", "Tensor", {conv.args[kWeight], v(column)}, sizes_of(conv.args[kWeight].value));
    const ValueId shift = is_none(conv.args[kBias]) ? emit_derived(e, "aten::neg", "", {bn.args[kMean]}, {c})
                                                    : emit_derived(e, "aten::sub", "Tensor", {conv.args[kBias], bn.args[kMean], one}, {c});
    ValueId bias = emit_derived(e, "aten::mul", "Tensor", {v(shift), v(scale)}, {c});
    if (!is_none(bn.args[kBeta])) bias = emit_derived(e, "aten::add", "Tensor", {v(bias), bn.args[kBeta], one}, {c});
    return {weight, bias};
  }

  // A captured, unwritten 1-D tensor of one value per channel of y.
  bool per_channel(const Arg& a, ValueId y) const { return inputs_.frozen(a, 1) && sizes_of(a.value)[0] == sizes_of(y)[1]; }

  std::vector<int64_t> sizes_of(ValueId v) const {
    return graph::constant_values(g_.values[v].meta.sizes).value_or(std::vector<int64_t>{});
  }
  static ValueId output(const Node& n) { return n.outputs[0].values[0]; }
  bool is_graph_output(ValueId v) const { return std::count(g_.outputs.begin(), g_.outputs.end(), v) > 0; }

  const Graph& g_;
  std::vector<std::vector<int>> users_;
  FrozenInputs inputs_;
};

}  // namespace

std::vector<bool> prepackable_convolutions(const Graph& g) {
  const Freezing freezing(g);
  std::vector<bool> out;
  for (const Node& n : g.nodes) out.push_back(freezing.prepackable(n));
  return out;
}

Graph freeze_convolutions(const Graph& g) {
  if (!at::hasMKLDNN() || !at::globalContext().userEnabledMkldnn()) return g;
  const Freezing freezing(g);
  const auto applies = [&](const Node& n) { return freezing.folded_into(n) != nullptr || freezing.applies_alone(n); };
  if (std::none_of(g.nodes.begin(), g.nodes.end(), applies)) return g;
  const Graph r = decompose(g, [&](Emitter& e, const Graph&, const Node& n) -> std::vector<ValueId> {
    if (const Node* conv = freezing.folded_into(n)) return {freezing.emit(e, *conv, &n)};
    if (freezing.applies_alone(n)) return {freezing.emit(e, n, nullptr)};
    return {};
  });
  return graph::eliminate_dead_code(r);  // the convolutions whose results only the folded batch norms read
}

}  // namespace jitc::inductor
