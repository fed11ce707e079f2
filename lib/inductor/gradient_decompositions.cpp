// Backward formulas with a reduction, rewritten into ops that fuse (as Inductor's decomposition table
// does), so that a training graph's loss and softmax gradients are one row kernel each instead of extern
// calls writing and reading back [rows, classes] tensors:
//   _softmax_backward_data(g, y, dim)      = y * (g - sum(g * y, dim))
//   _log_softmax_backward_data(g, y, dim)  = g - exp(y) * sum(g, dim)
//   nll_loss_backward(g, x [N, C], t [N])  = where(column == t[row] && t[row] != ignore, -g / total_weight, 0)
//   native_layer_norm_backward: see layer_norm_backward
// On static sizes, for float32 and float64 (ATen's kernels for half and bfloat16 accumulate otherwise).
#include "graph/args.h"
#include "inductor/decompositions.h"
#include "inductor/emitter.h"
#include "inductor/graph_uses.h"

#include <ATen/core/Reduction.h>

namespace jitc::inductor {

namespace {

using graph::Arg;
using graph::constant_arg;
using graph::Graph;
using graph::Node;
using graph::value_arg;
using graph::ValueId;

// Sizes where all are constant; empty where one is symbolic.
std::vector<int64_t> static_sizes(const graph::TensorMeta& m) { return graph::constant_values(m.sizes).value_or(std::vector<int64_t>{}); }

// An optional tensor argument that is absent (None, or an undefined tensor as autograd passes it).
bool is_none(const Arg& a) {
  return a.kind == Arg::Kind::kConstant && (a.constant.isNone() || (a.constant.isTensor() && !a.constant.toTensor().defined()));
}

bool is_float(c10::ScalarType t) { return t == c10::kFloat || t == c10::kDouble; }

bool values_at(const Node& n, std::initializer_list<size_t> positions) {
  for (size_t p : positions)
    if (p >= n.args.size() || n.args[p].kind != Arg::Kind::kValue) return false;
  return true;
}

// (grad, output, dim, input_dtype): the sizes, dtype and the normalized dim, or nothing. Half and
// bfloat16 gradients compute in float32 (`dtype`), rounded once to `stored` as eager's kernels do.
struct SoftmaxGrad {
  ValueId grad, output;
  std::vector<int64_t> sizes, reduced;
  c10::ScalarType dtype, stored;
  int64_t dim;
};

bool is_half_precision(c10::ScalarType t) { return t == c10::kHalf || t == c10::kBFloat16; }

std::optional<SoftmaxGrad> softmax_grad_of(const Graph& g, const Node& n) {
  if (!values_at(n, {0, 1}) || n.args.size() < 4 || !n.args[2].constant.isInt() || !n.args[3].constant.isInt()) return std::nullopt;
  const auto& meta = g.values[n.args[0].value].meta;
  const std::vector<int64_t> sizes = static_sizes(meta);
  const auto input_dtype = static_cast<c10::ScalarType>(n.args[3].constant.toInt());
  if (sizes.empty() || !(is_float(meta.dtype) || is_half_precision(meta.dtype)) || input_dtype != meta.dtype ||
      g.values[n.args[1].value].meta.dtype != meta.dtype)
    return std::nullopt;
  int64_t dim = n.args[2].constant.toInt();
  if (dim < 0) dim += static_cast<int64_t>(sizes.size());
  std::vector<int64_t> reduced = sizes;
  reduced[dim] = 1;
  const c10::ScalarType compute = is_half_precision(meta.dtype) ? c10::kFloat : meta.dtype;
  return SoftmaxGrad{n.args[0].value, n.args[1].value, sizes, reduced, compute, meta.dtype, dim};
}

ValueId sum_over(Emitter& e, ValueId v, const SoftmaxGrad& s) {
  return e.call("aten::sum", "dim_IntList",
                {value_arg(v), constant_arg(std::vector<int64_t>{s.dim}), constant_arg(true), constant_arg(c10::IValue())}, s.dtype,
                s.reduced);
}

ValueId softmax_backward(Emitter& e, const SoftmaxGrad& s) {
  const ValueId product = e.call("aten::mul", "Tensor", {value_arg(s.grad), value_arg(s.output)}, s.dtype, s.sizes);
  const ValueId difference = e.call(
      "aten::sub", "Tensor", {value_arg(s.grad), value_arg(sum_over(e, product, s)), constant_arg(c10::Scalar(1))}, s.dtype, s.sizes);
  return e.call("aten::mul", "Tensor", {value_arg(s.output), value_arg(difference)}, s.dtype, s.sizes);
}

ValueId log_softmax_backward(Emitter& e, const SoftmaxGrad& s) {
  const ValueId probabilities = e.call("aten::exp", "", {value_arg(s.output)}, s.dtype, s.sizes);
  const ValueId scaled = e.call("aten::mul", "Tensor", {value_arg(probabilities), value_arg(sum_over(e, s.grad, s))}, s.dtype, s.sizes);
  return e.call("aten::sub", "Tensor", {value_arg(s.grad), value_arg(scaled), constant_arg(c10::Scalar(1))}, s.dtype, s.sizes);
}

// nll_loss_backward(grad, self [N, C], target [N], weight None, reduction Mean|Sum, ignore_index, total_weight).
ValueId nll_loss_backward(Emitter& e, const Graph& g, const Node& n) {
  if (!values_at(n, {0, 1, 2, 6}) || !is_none(n.args[3]) || !n.args[4].constant.isInt() || !n.args[5].constant.isInt())
    return graph::kNoValue;
  const auto& self = g.values[n.args[1].value].meta;
  const std::vector<int64_t> sizes = static_sizes(self);
  const int64_t reduction = n.args[4].constant.toInt();
  if (sizes.size() != 2 || sizes[0] == 0 || sizes[1] == 0 || !is_float(self.dtype) || g.values[n.args[2].value].meta.dtype != c10::kLong ||
      (reduction != at::Reduction::Mean && reduction != at::Reduction::Sum) || !g.values[n.args[0].value].meta.sizes.empty())
    return graph::kNoValue;
  const int64_t rows = sizes[0], classes = sizes[1];
  const ValueId columns = e.call("aten::arange", "",
                                 {constant_arg(classes), constant_arg(c10::kLong), constant_arg(c10::IValue()), constant_arg(self.device),
                                  constant_arg(c10::IValue())},
                                 c10::kLong, {classes});
  const ValueId target = e.call("aten::unsqueeze", "", {value_arg(n.args[2].value), constant_arg(int64_t{1})}, c10::kLong, {rows, 1});
  const ValueId hit = e.call("aten::eq", "Tensor", {value_arg(target), value_arg(columns)}, c10::kBool, {rows, classes});
  const ValueId valid = e.call("aten::ne", "Scalar", {value_arg(target), constant_arg(n.args[5].constant)}, c10::kBool, {rows, 1});
  const ValueId mask = e.call("aten::logical_and", "", {value_arg(hit), value_arg(valid)}, c10::kBool, {rows, classes});
  ValueId scale = e.call("aten::neg", "", {value_arg(n.args[0].value)}, self.dtype, {});
  if (reduction == at::Reduction::Mean)
    scale = e.call("aten::div", "Tensor", {value_arg(scale), value_arg(n.args[6].value)}, self.dtype, {});
  return e.call("aten::where", "ScalarOther", {value_arg(mask), value_arg(scale), constant_arg(c10::Scalar(0.0))}, self.dtype,
                {rows, classes});
}

// The results of a decomposition computed in `computed`, each cast to the dtype of the node output it
// replaces (the outputs the node has, in order).
std::vector<ValueId> rounded_to_outputs(Emitter& e, const Graph& g, const Node& n, std::vector<ValueId> results, c10::ScalarType computed) {
  size_t k = 0;
  for (const auto& out : n.outputs) {
    if (out.values.empty()) continue;
    const auto& meta = g.values[out.values[0]].meta;
    if (computed != meta.dtype) results[k] = e.cast(results[k], meta.dtype, static_sizes(meta));
    ++k;
  }
  return results;
}

// native_layer_norm_backward(dy, x, normalized_shape, mean, rstd, weight?, bias?, mask), with
// x_hat = (x - mean) * rstd and g = dy * weight, over the N normalized elements of each row:
//   dx = rstd / N * (N * g - sum(g) - x_hat * sum(g * x_hat));  dw = sum over rows of dy * x_hat;  db = sum over rows of dy
// Half and bfloat16 operands compute in float32 and each result is rounded once to its dtype, as eager's
// kernels accumulate in float32.
std::vector<ValueId> layer_norm_backward(Emitter& e, const Graph& g, const Node& n) {
  if (!values_at(n, {0, 1, 3, 4}) || n.args.size() < 8 || !n.args[2].constant.isIntList() || n.outputs.size() != 3) return {};
  const auto& x_meta = g.values[n.args[1].value].meta;
  const std::vector<int64_t> sizes = static_sizes(x_meta);
  const std::vector<int64_t> normalized = n.args[2].constant.toIntVector();
  const bool half = is_half_precision(x_meta.dtype);
  if (sizes.empty() || !(is_float(x_meta.dtype) || half) || !contiguous_static(x_meta) || normalized.empty() ||
      normalized.size() >= sizes.size() || g.values[n.args[0].value].meta.sizes != x_meta.sizes ||
      g.values[n.args[0].value].meta.dtype != x_meta.dtype)
    return {};
  const bool weighted = n.args[5].kind == Arg::Kind::kValue;
  if (!weighted && !is_none(n.args[5])) return {};
  const c10::ScalarType t = half ? c10::kFloat : x_meta.dtype;
  const size_t outer = sizes.size() - normalized.size();
  std::vector<int64_t> inner_dims, outer_dims, rows(sizes.begin(), sizes.end());
  int64_t count = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (d < outer) outer_dims.push_back(static_cast<int64_t>(d));
    else inner_dims.push_back(static_cast<int64_t>(d)), count *= sizes[d], rows[d] = 1;
  }
  auto binary = [&](const char* name, ValueId a, ValueId b, const std::vector<int64_t>& shape) {
    std::vector<Arg> args{value_arg(a), value_arg(b)};
    if (std::string(name) == "aten::sub") args.push_back(constant_arg(c10::Scalar(1)));
    return e.call(name, "Tensor", std::move(args), t, shape);
  };
  auto sum = [&](ValueId v, const std::vector<int64_t>& dims, bool keep, const std::vector<int64_t>& shape) {
    return e.call("aten::sum", "dim_IntList", {value_arg(v), constant_arg(dims), constant_arg(keep), constant_arg(c10::IValue())}, t,
                  shape);
  };
  auto in_compute_type = [&](ValueId v, const std::vector<int64_t>& shape) {
    return g.values[v].meta.dtype == t ? v : e.cast(v, t, shape);
  };
  const ValueId dy = in_compute_type(n.args[0].value, sizes), mean = in_compute_type(n.args[3].value, rows),
                rstd = in_compute_type(n.args[4].value, rows);
  const ValueId x_hat = binary("aten::mul", binary("aten::sub", in_compute_type(n.args[1].value, sizes), mean, sizes), rstd, sizes);
  const ValueId scaled = weighted ? binary("aten::mul", dy, in_compute_type(n.args[5].value, normalized), sizes) : dy;
  std::vector<ValueId> results;
  if (!n.outputs[0].values.empty()) {
    const ValueId by_count =
        e.call("aten::mul", "Scalar", {value_arg(scaled), constant_arg(c10::Scalar(static_cast<double>(count)))}, t, sizes);
    const ValueId centred = binary("aten::sub", by_count, sum(scaled, inner_dims, true, rows), sizes);
    const ValueId projected =
        binary("aten::sub", centred,
               binary("aten::mul", x_hat, sum(binary("aten::mul", scaled, x_hat, sizes), inner_dims, true, rows), sizes), sizes);
    const ValueId factor = e.call("aten::div", "Scalar", {value_arg(rstd), constant_arg(c10::Scalar(static_cast<double>(count)))}, t, rows);
    results.push_back(binary("aten::mul", factor, projected, sizes));
  }
  if (!n.outputs[1].values.empty()) results.push_back(sum(binary("aten::mul", dy, x_hat, sizes), outer_dims, false, normalized));
  if (!n.outputs[2].values.empty()) results.push_back(sum(dy, outer_dims, false, normalized));
  return rounded_to_outputs(e, g, n, std::move(results), t);
}

}  // namespace

graph::Graph decompose_gradients(const graph::Graph& g) {
  return decompose(g, [](Emitter& e, const Graph& original, const Node& n) -> std::vector<ValueId> {
    if (n.mutates) return {};
    const std::string name = n.op.operator_name().name;
    if (name == "aten::_softmax_backward_data" || name == "aten::_log_softmax_backward_data") {
      auto s = softmax_grad_of(original, n);
      if (!s) return {};
      if (s->stored != s->dtype) s->grad = e.cast(s->grad, s->dtype, s->sizes), s->output = e.cast(s->output, s->dtype, s->sizes);
      const ValueId grad = name == "aten::_softmax_backward_data" ? softmax_backward(e, *s) : log_softmax_backward(e, *s);
      return {s->stored != s->dtype ? e.cast(grad, s->stored, s->sizes) : grad};
    }
    if (name == "aten::native_layer_norm_backward") return layer_norm_backward(e, original, n);
    if (name == "aten::nll_loss_backward") {
      const ValueId grad = nll_loss_backward(e, original, n);
      if (grad != graph::kNoValue) return {grad};
    }
    return {};
  });
}

}  // namespace jitc::inductor
