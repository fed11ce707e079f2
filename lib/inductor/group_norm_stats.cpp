#include "inductor/group_norm_stats.h"

#include "graph/args.h"
#include "graph/renumber.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <vector>

namespace jitc::inductor {

namespace {

using graph::Arg;
using graph::constant_arg;
using graph::Graph;
using graph::Node;
using graph::SymExpr;
using graph::TensorMeta;
using graph::ValueId;

bool applies(const Graph& g, const Node& n) {
  if (n.name() != "aten::group_norm" || n.mutates || n.args.size() < 2 || n.args[0].kind != Arg::Kind::kValue) return false;
  if (!n.args[1].constant.isInt() || n.outputs.size() != 1 || n.outputs[0].values.size() != 1) return false;
  const auto& sizes = g.values[n.args[0].value].meta.sizes;
  const int64_t groups = n.args[1].constant.toInt();
  return sizes.size() >= 2 && groups > 0 && sizes[1].is_constant() && sizes[1].offset % groups == 0 &&
         std::all_of(sizes.begin(), sizes.end(), [](const SymExpr& e) { return e.is_constant(); });
}

// A contiguous [N, groups] statistic. Kept in float32 for half and bfloat16 inputs, as ATen computes it:
// it is read back only by the output's kernel, never returned.
TensorMeta stats_meta(const TensorMeta& input, int64_t n, int64_t groups) {
  TensorMeta m;
  const bool reduced_float = input.dtype == c10::ScalarType::Half || input.dtype == c10::ScalarType::BFloat16;
  m.dtype = reduced_float ? c10::ScalarType::Float : input.dtype;
  m.device = input.device;
  m.sizes = {SymExpr::constant(n), SymExpr::constant(groups)};
  m.strides = {SymExpr::constant(groups), SymExpr::constant(1)};
  return m;
}

}  // namespace

graph::Graph group_norm_with_stats(const graph::Graph& g) {
  static const c10::OperatorHandle native = c10::Dispatcher::singleton().findSchemaOrThrow("aten::native_group_norm", "");
  Graph r = g;
  int32_t next_storage = 0;
  for (const auto& v : g.values) next_storage = std::max(next_storage, v.storage + 1);
  bool rewrote = false;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const Node& original = g.nodes[i];
    if (!applies(g, original)) continue;
    const TensorMeta input = g.values[original.args[0].value].meta;
    const int64_t n = input.sizes[0].offset, c = input.sizes[1].offset, groups = original.args[1].constant.toInt();
    int64_t hxw = 1;
    for (size_t d = 2; d < input.sizes.size(); ++d) hxw *= input.sizes[d].offset;
    auto optional_arg = [&](size_t at) { return at < original.args.size() ? original.args[at] : constant_arg(c10::IValue()); };
    const double eps = original.args.size() > 4 && original.args[4].constant.isDouble() ? original.args[4].constant.toDouble() : 1e-5;
    Node rewritten(native);
    rewritten.args = {original.args[0], optional_arg(2),   optional_arg(3),      constant_arg(n),
                      constant_arg(c),  constant_arg(hxw), constant_arg(groups), constant_arg(eps)};
    rewritten.outputs = {original.outputs[0]};
    for (int s = 0; s < 2; ++s)
      rewritten.outputs.push_back({false, {r.add_value(stats_meta(input, n, groups), static_cast<int32_t>(i), next_storage++)}});
    r.nodes[i] = std::move(rewritten);
    rewrote = true;
  }
  if (!rewrote) return r;
  return graph::renumbered(r);  // the new values in node order
}

}  // namespace jitc::inductor
