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
  double label_smoothing = 0;  // cross_entropy_loss only
};

bool half_precision(c10::ScalarType t) { return t == c10::kHalf || t == c10::kBFloat16; }

bool static_shape(const graph::TensorMeta& m) {
  return std::all_of(m.sizes.begin(), m.sizes.end(), [](const graph::SymExpr& e) { return e.is_constant(); });
}

std::optional<Loss> loss_of(const Graph& g, const Node& n) {
  const std::string name = n.op.operator_name().name;
  const bool logits = name == "aten::cross_entropy_loss";
  if (!logits && name != "aten::nll_loss" && name != "aten::nll_loss_nd") return std::nullopt;
  if (n.mutates || n.args.size() < 5 || n.args[0].kind != Arg::Kind::kValue || n.args[1].kind != Arg::Kind::kValue) return std::nullopt;
  if (!n.args[2].constant.isNone() || !n.args[3].constant.isInt() || !n.args[4].constant.isInt()) return std::nullopt;
  if (logits && (n.args.size() < 6 || !n.args[5].constant.isDouble())) return std::nullopt;
  const auto& x = g.values[n.args[0].value].meta;
  const auto& t = g.values[n.args[1].value].meta;
  if (x.sizes.size() != 2 || t.sizes.size() != 1 || t.dtype != c10::kLong || !static_shape(x) || !static_shape(t)) return std::nullopt;
  if (!decomposed_floating(x.dtype)) return std::nullopt;
  // Eager sums the rows' smoothing losses in half precision, which overflows to inf past 65504 (1000
  // classes, 9 rows) where float32 would not: that loss stays eager's.
  if (x.dtype == c10::kHalf && logits && n.args[5].constant.toDouble() != 0) return std::nullopt;
  if (x.sizes[0].offset == 0 || x.sizes[1].offset == 0 || x.sizes[0] != t.sizes[0]) return std::nullopt;
  if (n.outputs.size() != 1 || n.outputs[0].values.size() != 1) return std::nullopt;
  return Loss{logits,
              n.args[0].value,
              n.args[1].value,
              n.args[3].constant.toInt(),
              n.args[4].constant.toInt(),
              logits ? n.args[5].constant.toDouble() : 0.0};
}

// The dtype a loss computes in: float32 for half and bfloat16 scores.
c10::ScalarType compute_type(const Graph& g, const Loss& l) {
  const c10::ScalarType stored = g.values[l.scores].meta.dtype;
  return half_precision(stored) ? c10::kFloat : stored;
}

// With label smoothing e over C classes, eager adds e / C times the row's smoothing loss
// -sum_j log_softmax(x)_j = C * lse - sum_j x_j to (1 - e) times the row's nll, each reduced as the loss
// is (a mean divides both by the rows not ignored).
ValueId smoothed(Emitter& e, const Graph& g, const Loss& l, ValueId scores, ValueId lse, ValueId nll) {
  const int64_t rows = g.values[l.scores].meta.sizes[0].offset, classes = g.values[l.scores].meta.sizes[1].offset;
  const c10::ScalarType t = compute_type(g, l);
  const ValueId sums =
      e.call("aten::sum", "dim_IntList",
             {value_arg(scores), constant_arg(std::vector<int64_t>{1}), constant_arg(false), constant_arg(c10::IValue())}, t, {rows});
  const ValueId scaled = e.call("aten::mul", "Scalar", {value_arg(lse), constant_arg(static_cast<double>(classes))}, t, {rows});
  const ValueId smooth = e.call("aten::sub", "Tensor", {value_arg(scaled), value_arg(sums), constant_arg(c10::Scalar(1))}, t, {rows});
  const ValueId kept = e.call("aten::mul", "Scalar", {value_arg(nll), constant_arg(1.0 - l.label_smoothing)}, t, {rows});
  return e.call("aten::add", "Tensor", {value_arg(kept), value_arg(smooth), constant_arg(c10::Scalar(l.label_smoothing / classes))}, t,
                {rows});
}

// The loss of each row, 0 where the target is ignore_index; then the reduction. Returns the result.
ValueId emit_loss(Emitter& e, const Graph& g, const Loss& l) {
  const int64_t rows = g.values[l.scores].meta.sizes[0].offset, classes = g.values[l.scores].meta.sizes[1].offset;
  const c10::ScalarType stored = g.values[l.scores].meta.dtype, t = compute_type(g, l), index = c10::kLong, flag = c10::kBool;
  const ValueId scores = t == stored ? l.scores : e.cast(l.scores, t, {rows, classes});
  const ValueId valid = e.call("aten::ne", "Scalar", {value_arg(l.target), constant_arg(l.ignore_index)}, flag, {rows});
  const ValueId safe =
      e.call("aten::where", "ScalarOther", {value_arg(valid), value_arg(l.target), constant_arg(int64_t{0})}, index, {rows});
  const ValueId column = e.call("aten::unsqueeze", "", {value_arg(safe), constant_arg(int64_t{1})}, index, {rows, 1});
  const ValueId gathered =
      e.call("aten::gather", "", {value_arg(scores), constant_arg(int64_t{1}), value_arg(column), constant_arg(false)}, t, {rows, 1});
  const ValueId picked = e.call("aten::squeeze", "dim", {value_arg(gathered), constant_arg(int64_t{1})}, t, {rows});
  ValueId row_loss;
  if (l.from_logits) {
    const ValueId lse =
        e.call("aten::logsumexp", "", {value_arg(scores), constant_arg(std::vector<int64_t>{1}), constant_arg(false)}, t, {rows});
    row_loss = e.call("aten::sub", "Tensor", {value_arg(lse), value_arg(picked), constant_arg(c10::Scalar(1))}, t, {rows});
    if (l.label_smoothing != 0) row_loss = smoothed(e, g, l, scores, lse, row_loss);
  } else {
    row_loss = e.call("aten::neg", "", {value_arg(picked)}, t, {rows});
  }
  const ValueId loss = e.call("aten::where", "ScalarOther", {value_arg(valid), value_arg(row_loss), constant_arg(0.0)}, t, {rows});
  auto rounded = [&](ValueId v, const std::vector<int64_t>& sizes) { return t == stored ? v : e.cast(v, stored, sizes); };
  if (l.reduction == at::Reduction::None) return rounded(loss, {rows});
  const ValueId total = e.call("aten::sum", "", {value_arg(loss), constant_arg(c10::IValue())}, t, {});
  if (l.reduction == at::Reduction::Sum) return rounded(total, {});
  const ValueId counted = e.call("aten::sum", "", {value_arg(valid), constant_arg(c10::IValue())}, index, {});
  // 0 / 0 = nan when all are ignored, as eager
  return rounded(e.call("aten::div", "Tensor", {value_arg(total), value_arg(counted)}, t, {}), {});
}

// mse_loss(x, y, reduction) over floating tensors of one static shape: (x - y)^2, then eager's
// reduction of it (a mean or a sum over every element). Nullopt where it does not apply.
std::optional<ValueId> mse_loss(Emitter& e, const Graph& g, const Node& n) {
  if (n.op.operator_name().name != "aten::mse_loss" || n.mutates || n.args.size() != 3) return std::nullopt;
  if (n.args[0].kind != Arg::Kind::kValue || n.args[1].kind != Arg::Kind::kValue || !n.args[2].constant.isInt()) return std::nullopt;
  const auto& x = g.values[n.args[0].value].meta;
  const auto& y = g.values[n.args[1].value].meta;
  const int64_t reduction = n.args[2].constant.toInt();
  if (x.dtype != y.dtype || !decomposed_floating(x.dtype) || x.sizes != y.sizes || !static_shape(x)) return std::nullopt;
  if (reduction != at::Reduction::None && reduction != at::Reduction::Mean && reduction != at::Reduction::Sum) return std::nullopt;
  std::vector<int64_t> sizes;
  for (const auto& s : x.sizes) sizes.push_back(s.offset);
  // In x's dtype: eager's half and bfloat16 kernels round the difference and its square as these nodes do
  // (an inf past half's range included), then reduce accumulating in float32, as a kernel does.
  const ValueId d =
      e.call("aten::sub", "Tensor", {value_arg(n.args[0].value), value_arg(n.args[1].value), constant_arg(c10::Scalar(1))}, x.dtype, sizes);
  const ValueId squared = e.call("aten::mul", "Tensor", {value_arg(d), value_arg(d)}, x.dtype, sizes);
  if (reduction == at::Reduction::None) return squared;
  return e.call(reduction == at::Reduction::Mean ? "aten::mean" : "aten::sum", "", {value_arg(squared), constant_arg(c10::IValue())},
                x.dtype, {});
}

// binary_cross_entropy(x, y, weight?, reduction Mean or Sum) over float or double tensors of one static
// shape on the CPU: the unreduced loss (a lowered pointwise op, with eager's range check), then eager's
// reduction of it.
std::optional<ValueId> binary_cross_entropy(Emitter& e, const Graph& g, const Node& n) {
  if (n.op.operator_name().name != "aten::binary_cross_entropy" || n.mutates || n.args.size() != 4 || !n.args[3].constant.isInt())
    return std::nullopt;
  if (n.args[0].kind != Arg::Kind::kValue || n.args[1].kind != Arg::Kind::kValue) return std::nullopt;
  const auto& x = g.values[n.args[0].value].meta;
  const int64_t reduction = n.args[3].constant.toInt();
  const bool weighted = n.args[2].kind == Arg::Kind::kValue;
  for (const Arg* a : {&n.args[1], weighted ? &n.args[2] : &n.args[1]})
    if (g.values[a->value].meta.dtype != x.dtype || g.values[a->value].meta.sizes != x.sizes) return std::nullopt;
  if ((x.dtype != c10::kFloat && x.dtype != c10::kDouble) || !x.device.is_cpu() || !static_shape(x)) return std::nullopt;
  if (reduction != at::Reduction::Mean && reduction != at::Reduction::Sum) return std::nullopt;
  std::vector<int64_t> sizes;
  for (const auto& s : x.sizes) sizes.push_back(s.offset);
  const ValueId loss = e.call("aten::binary_cross_entropy", "",
                              {n.args[0], n.args[1], n.args[2], constant_arg(int64_t{at::Reduction::None})}, x.dtype, sizes);
  return e.call(reduction == at::Reduction::Mean ? "aten::mean" : "aten::sum", "", {value_arg(loss), constant_arg(c10::IValue())}, x.dtype,
                {});
}

}  // namespace

// Half and bfloat16 losses compute in float32, as eager's loss kernels accumulate, and round where eager's
// results are rounded.
bool decomposed_floating(c10::ScalarType t) { return t == c10::kFloat || t == c10::kDouble || half_precision(t); }

graph::Graph decompose_losses(const graph::Graph& g) {
  return decompose(g, [](Emitter& e, const Graph& original, const Node& n) -> std::vector<ValueId> {
    if (auto mse = mse_loss(e, original, n)) return {*mse};
    if (auto bce = binary_cross_entropy(e, original, n)) return {*bce};
    const auto loss = loss_of(original, n);
    if (!loss ||
        (loss->reduction != at::Reduction::None && loss->reduction != at::Reduction::Mean && loss->reduction != at::Reduction::Sum))
      return {};
    return {emit_loss(e, original, *loss)};
  });
}

}  // namespace jitc::inductor
