// Composite ops that eager computes through other ops, traced as themselves: written as those ops, they
// fuse with their neighbours instead of running as extern ATen calls. adaptive_avg_pool2d to 1x1 (a
// CNN's global pooling) is ATen's mean over H and W with the dims kept; outer(a, b) is a[:, None] * b.
#include "inductor/decompositions.h"

#include "graph/args.h"
#include "inductor/emitter.h"

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

}  // namespace

graph::Graph decompose_composites(const graph::Graph& g) {
  return decompose(g, [](Emitter& e, const Graph& original, const Node& n) -> std::vector<ValueId> {
    if (auto pooled = global_average_pool(e, original, n)) return {*pooled};
    if (auto product = outer_product(e, original, n)) return {*product};
    return {};
  });
}

}  // namespace jitc::inductor
