#include "inductor/decompositions.h"

#include "graph/args.h"
#include "graph/renumber.h"

#include <jitc/detail/internal_assert.h>

#include <ATen/core/Reduction.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>

namespace jitc::inductor {

namespace {

using graph::Arg;
using graph::constant_arg;
using graph::Graph;
using graph::Node;
using graph::value_arg;
using graph::ValueId;

// Appends nodes to a graph being rebuilt. Each result is contiguous, with the dtype and sizes given: the
// metadata of these few ops is known without running them (their meta kernels are registered from
// Python, not in LibTorch).
class Emitter {
 public:
  Emitter(Graph& g, c10::Device device) : g_(g), device_(device) {
    for (const auto& v : g.values) next_storage_ = std::max(next_storage_, v.storage + 1);
  }
  ValueId call(const char* name, const char* overload, std::vector<Arg> args, c10::ScalarType dtype, std::vector<int64_t> sizes) {
    graph::TensorMeta meta;
    meta.dtype = dtype;
    meta.device = device_;
    std::vector<int64_t> strides(sizes.size(), 1);
    for (size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * std::max<int64_t>(sizes[d], 1);
    meta.sizes = graph::constant_shape(sizes.data(), sizes.size());
    meta.strides = graph::constant_shape(strides.data(), strides.size());
    meta.storage_offset = graph::SymExpr::constant(0);
    Node n(c10::Dispatcher::singleton().findSchemaOrThrow(name, overload));
    // A view (unsqueeze, squeeze) shares its argument's memory; every other result has memory of its own.
    const bool view = n.op.schema().returns()[0].alias_info() != nullptr;
    const int32_t storage = view ? g_.values[args[0].value].storage : next_storage_++;
    n.args = std::move(args);
    const ValueId v = g_.add_value(std::move(meta), static_cast<int32_t>(g_.nodes.size()), storage);
    n.outputs.push_back({false, {v}});
    g_.nodes.push_back(std::move(n));
    return v;
  }

 private:
  Graph& g_;
  c10::Device device_;
  int32_t next_storage_ = 0;
};

struct Loss {
  bool from_logits = false;  // cross_entropy_loss; otherwise nll_loss over log-probabilities
  ValueId scores = graph::kNoValue, target = graph::kNoValue;
  int64_t reduction = at::Reduction::Mean, ignore_index = -100;
};

bool static_shape(const graph::TensorMeta& m) {
  return std::all_of(m.sizes.begin(), m.sizes.end(), [](const graph::SymExpr& e) { return e.is_constant(); });
}

std::optional<Loss> loss_of(const Graph& g, const Node& n) {
  const std::string name = n.op.operator_name().name;
  const bool logits = name == "aten::cross_entropy_loss";
  if (!logits && name != "aten::nll_loss" && name != "aten::nll_loss_nd") return std::nullopt;
  if (n.mutates || n.args.size() < 5 || n.args[0].kind != Arg::Kind::kValue || n.args[1].kind != Arg::Kind::kValue) return std::nullopt;
  if (!n.args[2].constant.isNone() || !n.args[3].constant.isInt() || !n.args[4].constant.isInt()) return std::nullopt;
  if (logits && (n.args.size() < 6 || !n.args[5].constant.isDouble() || n.args[5].constant.toDouble() != 0.0)) return std::nullopt;
  const auto& x = g.values[n.args[0].value].meta;
  const auto& t = g.values[n.args[1].value].meta;
  if (x.sizes.size() != 2 || t.sizes.size() != 1 || t.dtype != c10::kLong || !static_shape(x) || !static_shape(t)) return std::nullopt;
  if (x.dtype != c10::kFloat && x.dtype != c10::kDouble) return std::nullopt;
  if (x.sizes[0].offset == 0 || x.sizes[1].offset == 0 || x.sizes[0] != t.sizes[0]) return std::nullopt;
  if (n.outputs.size() != 1 || n.outputs[0].values.size() != 1) return std::nullopt;
  return Loss{logits, n.args[0].value, n.args[1].value, n.args[3].constant.toInt(), n.args[4].constant.toInt()};
}

// The loss of each row, 0 where the target is ignore_index; then the reduction. Returns the result.
ValueId emit_loss(Emitter& e, const Graph& g, const Loss& l) {
  const int64_t rows = g.values[l.scores].meta.sizes[0].offset;
  const c10::ScalarType t = g.values[l.scores].meta.dtype, index = c10::kLong, flag = c10::kBool;
  const ValueId valid = e.call("aten::ne", "Scalar", {value_arg(l.target), constant_arg(l.ignore_index)}, flag, {rows});
  const ValueId safe =
      e.call("aten::where", "ScalarOther", {value_arg(valid), value_arg(l.target), constant_arg(int64_t{0})}, index, {rows});
  const ValueId column = e.call("aten::unsqueeze", "", {value_arg(safe), constant_arg(int64_t{1})}, index, {rows, 1});
  const ValueId gathered =
      e.call("aten::gather", "", {value_arg(l.scores), constant_arg(int64_t{1}), value_arg(column), constant_arg(false)}, t, {rows, 1});
  const ValueId picked = e.call("aten::squeeze", "dim", {value_arg(gathered), constant_arg(int64_t{1})}, t, {rows});
  ValueId row_loss;
  if (l.from_logits) {
    const ValueId lse =
        e.call("aten::logsumexp", "", {value_arg(l.scores), constant_arg(std::vector<int64_t>{1}), constant_arg(false)}, t, {rows});
    row_loss = e.call("aten::sub", "Tensor", {value_arg(lse), value_arg(picked), constant_arg(c10::Scalar(1))}, t, {rows});
  } else {
    row_loss = e.call("aten::neg", "", {value_arg(picked)}, t, {rows});
  }
  const ValueId loss = e.call("aten::where", "ScalarOther", {value_arg(valid), value_arg(row_loss), constant_arg(0.0)}, t, {rows});
  if (l.reduction == at::Reduction::None) return loss;
  const ValueId total = e.call("aten::sum", "", {value_arg(loss), constant_arg(c10::IValue())}, t, {});
  if (l.reduction == at::Reduction::Sum) return total;
  const ValueId counted = e.call("aten::sum", "", {value_arg(valid), constant_arg(c10::IValue())}, index, {});
  return e.call("aten::div", "Tensor", {value_arg(total), value_arg(counted)}, t, {});  // 0 / 0 = nan when all are ignored, as eager
}

}  // namespace

graph::Graph decompose_losses(const graph::Graph& g) {
  if (std::none_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return loss_of(g, n).has_value(); })) return g;
  Graph r = g;
  r.nodes.clear();
  for (const Node& n : g.nodes) {
    const auto loss = loss_of(g, n);
    if (!loss ||
        (loss->reduction != at::Reduction::None && loss->reduction != at::Reduction::Mean && loss->reduction != at::Reduction::Sum)) {
      r.nodes.push_back(n);
      continue;
    }
    const ValueId out = n.outputs[0].values[0];
    Emitter emitter(r, g.values[out].meta.device);
    const ValueId result = emit_loss(emitter, g, *loss);
    // The traced result takes the place of the decomposition's last value (later nodes read it); that
    // value is dropped when the graph is renumbered.
    JITC_INTERNAL_ASSERT(r.values[result].meta.sizes == g.values[out].meta.sizes && r.values[result].meta.dtype == g.values[out].meta.dtype,
                         "a loss decomposition's result differs from the traced op's");
    r.nodes.back().outputs[0].values[0] = out;
    r.values[out].producer = static_cast<int32_t>(r.nodes.size() - 1);
  }
  return graph::renumbered(r);
}

}  // namespace jitc::inductor
