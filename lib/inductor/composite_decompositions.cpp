// Composite ops that eager computes through other ops, traced as themselves: written as those ops, they
// fuse with their neighbours instead of running as extern ATen calls. adaptive_avg_pool2d to 1x1 (a
// CNN's global pooling) is ATen's mean over H and W with the dims kept; outer(a, b) is a[:, None] * b.
// embedding_bag, whose first result alone is read, runs as the op eager calls for a weight that needs no
// gradient.
#include "inductor/decompositions.h"

#include "graph/args.h"
#include "inductor/emitter.h"
#include "inductor/graph_uses.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace jitc::inductor {

namespace {

using graph::Arg;
using graph::constant_arg;
using graph::Graph;
using graph::Node;
using graph::value_arg;
using graph::ValueId;

// The sizes of a tensor of static shape that is contiguous (size-1 dims aside); nullopt otherwise.
std::optional<std::vector<int64_t>> contiguous_sizes(const graph::TensorMeta& m) {
  std::vector<int64_t> sizes;
  int64_t expected = 1;
  for (size_t d = m.sizes.size(); d-- > 0;) {
    if (!m.sizes[d].is_constant() || !m.strides[d].is_constant()) return std::nullopt;
    if (m.sizes[d].offset != 1 && m.strides[d].offset != expected) return std::nullopt;
    expected *= m.sizes[d].offset;
    sizes.insert(sizes.begin(), m.sizes[d].offset);
  }
  return sizes;
}

// adaptive_avg_pool2d(x, [1, 1]) over a contiguous floating 3-D or 4-D x of nonzero sizes, as ATen
// computes it: x.mean([-1, -2], keepdim). A channels-last x (whose pooled result ATen re-strides) stays.
std::optional<ValueId> global_average_pool(Emitter& e, const Graph& g, const Node& n) {
  if (n.op.operator_name().name != "aten::adaptive_avg_pool2d" || n.mutates || n.args.size() != 2) return std::nullopt;
  const Arg &x = n.args[0], &output_size = n.args[1];
  if (x.kind != Arg::Kind::kValue || !output_size.constant.isIntList() || output_size.constant.toIntVector() != std::vector<int64_t>{1, 1})
    return std::nullopt;
  const graph::TensorMeta& m = g.values[x.value].meta;
  const auto sizes = contiguous_sizes(m);
  if (!decomposed_floating(m.dtype) || !sizes || (sizes->size() != 3 && sizes->size() != 4)) return std::nullopt;
  for (int64_t s : *sizes)
    if (s == 0) return std::nullopt;  // eager's errors for empty inputs
  std::vector<int64_t> out = *sizes;
  out[out.size() - 1] = out[out.size() - 2] = 1;
  return e.call("aten::mean", "dim",
                {value_arg(x.value), constant_arg(std::vector<int64_t>{-1, -2}), constant_arg(true), constant_arg(c10::IValue())}, m.dtype,
                out);
}

// outer(a, b) of 1-D a [n] and b [m]: a.unsqueeze(1) * b.unsqueeze(0), in the result's dtype.
std::optional<ValueId> outer_product(Emitter& e, const Graph& g, const Node& n) {
  const auto name = n.op.operator_name().name;
  if ((name != "aten::outer" && name != "aten::ger") || n.mutates || n.args.size() != 2 || n.outputs.size() != 1) return std::nullopt;
  if (n.args[0].kind != Arg::Kind::kValue || n.args[1].kind != Arg::Kind::kValue) return std::nullopt;
  const auto a = contiguous_sizes(g.values[n.args[0].value].meta), b = contiguous_sizes(g.values[n.args[1].value].meta);
  if (!a || !b || a->size() != 1 || b->size() != 1) return std::nullopt;
  const graph::TensorMeta& result = g.values[n.outputs[0].values[0]].meta;
  const ValueId column = e.call("aten::unsqueeze", "", {value_arg(n.args[0].value), constant_arg(int64_t{1})},
                                g.values[n.args[0].value].meta.dtype, {(*a)[0], 1});
  const ValueId row = e.call("aten::unsqueeze", "", {value_arg(n.args[1].value), constant_arg(int64_t{0})},
                             g.values[n.args[1].value].meta.dtype, {1, (*b)[0]});
  return e.call("aten::mul", "Tensor", {value_arg(column), value_arg(row)}, result.dtype, {(*a)[0], (*b)[0]});
}

// The padding_idx that embedding_bag(weight, ..., padding_idx) passes on (wrapped to [0, rows), -1 for
// none), or nullopt where it is not a constant eager accepts (the composite then runs and raises).
std::optional<int64_t> passed_padding_idx(const Node& n, const graph::TensorMeta& weight) {
  if (n.op.operator_name().overload_name.empty()) return -1;
  const Arg& a = n.args.back();
  if (a.kind != Arg::Kind::kConstant || !a.symbolic.empty()) return std::nullopt;
  if (a.constant.isNone()) return -1;
  if (!a.constant.isInt() || !weight.sizes[0].is_constant()) return std::nullopt;
  const int64_t rows = weight.sizes[0].offset, padding = a.constant.toInt();
  if (padding < -rows || padding >= rows) return std::nullopt;
  return padding < 0 ? padding + rows : padding;
}

// embedding_bag(weight, indices, offsets, ...) runs _embedding_bag when the weight requires grad (a
// module's parameter, also under NoGradGuard and InferenceMode) and _embedding_bag_forward_only
// otherwise, on contiguous indices and offsets; both return the same bags, but _embedding_bag also
// computes what its backward reads. Where nothing reads the other three results, the call is
// _embedding_bag_forward_only (an inference graph: a training graph holds _embedding_bag itself).
Graph forward_only_embedding_bags(const Graph& g) {
  static const c10::OperatorHandle forward_only = c10::Dispatcher::singleton().findSchemaOrThrow("aten::_embedding_bag_forward_only", "");
  const auto readers = readers_by_value(g);
  auto unread = [&](ValueId v) { return readers[v].empty() && std::count(g.outputs.begin(), g.outputs.end(), v) == 0; };
  Graph r = g;
  for (Node& n : r.nodes) {
    if (n.op.operator_name().name != "aten::embedding_bag" || n.mutates || n.outputs.size() != 4 || n.args.size() < 8) continue;
    if (!std::all_of(n.outputs.begin() + 1, n.outputs.end(),
                     [&](const graph::NodeOutput& o) { return o.values.size() == 1 && unread(o.values[0]); }))
      continue;
    if (n.args[0].kind != Arg::Kind::kValue || n.args[1].kind != Arg::Kind::kValue || n.args[2].kind != Arg::Kind::kValue) continue;
    if (!contiguous_sizes(g.values[n.args[1].value].meta) || !contiguous_sizes(g.values[n.args[2].value].meta)) continue;
    const auto padding = passed_padding_idx(n, g.values[n.args[0].value].meta);
    if (!padding) continue;
    n.args.resize(8);
    n.args.push_back(constant_arg(*padding));
    n.op = forward_only;
  }
  return r;
}

}  // namespace

graph::Graph decompose_composites(const graph::Graph& g) {
  return forward_only_embedding_bags(decompose(g, [](Emitter& e, const Graph& original, const Node& n) -> std::vector<ValueId> {
    if (auto pooled = global_average_pool(e, original, n)) return {*pooled};
    if (auto product = outer_product(e, original, n)) return {*product};
    return {};
  }));
}

}  // namespace jitc::inductor
