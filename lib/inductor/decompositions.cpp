#include "inductor/decompositions.h"

#include "graph/args.h"
#include "graph/renumber.h"
#include "inductor/emitter.h"

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
  return decompose(g, [](Emitter& e, const Graph& original, const Node& n) -> std::vector<ValueId> {
    const auto loss = loss_of(original, n);
    if (!loss ||
        (loss->reduction != at::Reduction::None && loss->reduction != at::Reduction::Mean && loss->reduction != at::Reduction::Sum))
      return {};
    return {emit_loss(e, original, *loss)};
  });
}

}  // namespace jitc::inductor
