// Batch norm in training mode, decomposed as Inductor's decomposition table does, so that a training
// graph's normalizations fuse with the activations around them instead of running as ATen calls (and,
// in the forward, instead of keeping the whole graph on eager replay: native_batch_norm writes its running
// statistics without saying so in its schema, which functionalization refuses):
//   native_batch_norm(x, w, b, running_mean, running_var, training=true, momentum, eps)
//     mean, var = mean(x), var(x, correction 0) over every dim but 1; invstd = 1 / sqrt(var + eps)
//     out = x * (invstd * w) + (b - mean * invstd * w)                      (ATen's CPU kernel's form)
//     running_mean.copy_(momentum * mean + (1 - momentum) * running_mean)   (an annotated in-place op)
//     running_var.copy_(momentum * var(x, correction 1) + (1 - momentum) * running_var)
// The forward has no float constant of the sizes (the unbiased variance is a reduction of its own): two
// traces' decompositions at different batch sizes generalize to one symbolic graph (runtime/pipeline.cpp
// functional_graph). The backward multiplies its sums by the float 1 / n; with `integer_counts` it divides
// them by the integer n instead (a product of sizes, which fits as a symbol), so that a symbolic CUDA
// backward is fitted from two traces' decompositions (runtime/training_entry.cpp).
//   native_batch_norm_backward(dy, x, w, ..., save_mean, save_invstd, train=true, eps, mask)
//     dx = (dy - sum(dy) / n - (x - mean) * sum((x - mean) * dy) * invstd^2 / n) * invstd * w
//     dw = sum((x - mean) * dy) * invstd; db = sum(dy)
// On static floating-point tensors of any layout (the result has the input's). Half and bfloat16 batch norms
// compute in float32 and round their results once, as eager's kernels do (their statistics are float32
// on CUDA, the input's dtype on the CPU: the traced outputs say which). cuDNN's batch norm (what
// at::batch_norm runs on CUDA) becomes the native one first (native_batch_norms). batch_norm itself, as a
// module in training mode records it under NoGradGuard or InferenceMode, decomposes alike.
#include "graph/args.h"
#include "inductor/decompositions.h"
#include "inductor/emitter.h"

#include <optional>

namespace jitc::inductor {

namespace {

using graph::Arg;
using graph::constant_arg;
using graph::Graph;
using graph::Node;
using graph::value_arg;
using graph::ValueId;

// An optional tensor argument: its value, kNoValue when absent, nullopt when it is something else.
std::optional<ValueId> optional_value(const Node& n, size_t i) {
  if (i >= n.args.size()) return std::nullopt;
  const Arg& a = n.args[i];
  if (a.kind == Arg::Kind::kValue) return a.value;
  if (a.kind == Arg::Kind::kConstant && (a.constant.isNone() || (a.constant.isTensor() && !a.constant.toTensor().defined())))
    return graph::kNoValue;
  return std::nullopt;
}

bool is_float_type(c10::ScalarType t) { return t == c10::kFloat || t == c10::kDouble || t == c10::kHalf || t == c10::kBFloat16; }

// The sizes of a static floating-point tensor of rank >= 2, contiguous unless `any_layout` (the backward's
// operands, only read: a training graph's saved values may be channels-last, channels_last.h); empty otherwise.
std::vector<int64_t> plain_sizes(const graph::TensorMeta& m, bool any_layout = false) {
  if (!is_float_type(m.dtype)) return {};
  std::vector<int64_t> sizes;
  for (const auto& s : m.sizes) {
    if (!s.is_constant() || s.offset == 0) return {};
    sizes.push_back(s.offset);
  }
  int64_t stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (!m.strides[d].is_constant()) return {};
    if (sizes[d] != 1 && !any_layout && m.strides[d].offset != stride) return {};
    stride *= sizes[d];
  }
  return sizes.size() >= 2 ? sizes : std::vector<int64_t>{};
}

struct Shape {
  std::vector<int64_t> sizes, reduced, channel;  // the input's; the dims but 1; [1, C, 1...]
  int64_t channels = 0, count = 0;               // C; elements per channel
  c10::ScalarType dtype = c10::kFloat;           // the input's
  c10::ScalarType compute = c10::kFloat;         // what the statistics and the transform are computed in
};

std::optional<Shape> shape_of(const Graph& g, ValueId x, bool any_layout = false) {
  Shape s;
  s.sizes = plain_sizes(g.values[x].meta, any_layout);
  if (s.sizes.empty()) return std::nullopt;
  s.dtype = g.values[x].meta.dtype;
  s.compute = s.dtype == c10::kDouble ? c10::kDouble : c10::kFloat;
  s.channels = s.sizes[1];
  s.count = 1;
  s.channel.assign(s.sizes.size(), 1);
  s.channel[1] = s.channels;
  for (size_t d = 0; d < s.sizes.size(); ++d)
    if (d != 1) s.reduced.push_back(static_cast<int64_t>(d)), s.count *= s.sizes[d];
  return s;
}

class Ops {
 public:
  Ops(Emitter& e, const Shape& s) : e_(e), s_(s) {}
  ValueId binary(const char* name, ValueId a, ValueId b, const std::vector<int64_t>& sizes) {
    std::vector<Arg> args{value_arg(a), value_arg(b)};
    if (std::string(name) == "aten::add" || std::string(name) == "aten::sub") args.push_back(constant_arg(c10::Scalar(1)));
    return e_.call(name, "Tensor", std::move(args), s_.compute, sizes);
  }
  ValueId scaled(ValueId a, double factor) {
    return e_.call("aten::mul", "Scalar", {value_arg(a), constant_arg(c10::Scalar(factor))}, s_.compute, {s_.channels});
  }
  // A per-channel value divided by the elements per channel: by the integer, or times its float reciprocal.
  ValueId per_count(ValueId v, bool integer_count) {
    if (!integer_count) return scaled(v, 1.0 / static_cast<double>(s_.count));
    return e_.call("aten::div", "Scalar", {value_arg(v), constant_arg(c10::Scalar(s_.count))}, s_.compute, {s_.channels});
  }
  ValueId per_channel(ValueId v) { return e_.call("aten::view", "", {value_arg(v), constant_arg(s_.channel)}, s_.compute, s_.channel); }
  ValueId sum(ValueId v) {
    return e_.call("aten::sum", "dim_IntList", {value_arg(v), constant_arg(s_.reduced), constant_arg(false), constant_arg(c10::IValue())},
                   s_.compute, {s_.channels});
  }
  ValueId variance(ValueId x, int64_t correction) {
    return e_.call("aten::var", "correction",
                   {value_arg(x), constant_arg(s_.reduced), constant_arg(c10::Scalar(correction)), constant_arg(false)}, s_.compute,
                   {s_.channels});
  }
  // `v` (of the graph, `sizes`) in the compute dtype; `v` itself where it has it.
  ValueId computed(ValueId v, const std::vector<int64_t>& sizes) {
    return e_.dtype_of(v) == s_.compute ? v : e_.cast(v, s_.compute, sizes);
  }
  // `v` (computed) rounded to `to`, as eager stores a result of that dtype.
  ValueId stored(ValueId v, c10::ScalarType to, const std::vector<int64_t>& sizes) { return to == s_.compute ? v : e_.cast(v, to, sizes); }
  // running.copy_(momentum * statistic + (1 - momentum) * running); later readers see the new version.
  void update(ValueId running, ValueId statistic, double momentum) {
    const ValueId next =
        binary("aten::add", scaled(statistic, momentum), scaled(computed(running, {s_.channels}), 1 - momentum), {s_.channels});
    const ValueId written = e_.call("aten::copy_", "", {value_arg(running), value_arg(next), constant_arg(false)}, s_.dtype, {s_.channels});
    e_.last().mutates = true;
    e_.renamed(running, written);
  }

 private:
  Emitter& e_;
  const Shape& s_;
};

// The dtype of output k's value (its traced meta).
c10::ScalarType output_dtype(const Graph& g, const Node& n, size_t k) { return g.values[n.outputs[k].values.at(0)].meta.dtype; }

std::vector<ValueId> batch_norm_forward(Emitter& e, const Graph& g, const Node& n) {
  if (n.args.size() < 8 || !n.args[5].constant.isBool() || !n.args[5].constant.toBool()) return {};
  const auto x = optional_value(n, 0), w = optional_value(n, 1), b = optional_value(n, 2), rm = optional_value(n, 3),
             rv = optional_value(n, 4);
  if (!x || *x == graph::kNoValue || !w || !b || !rm || !rv || (*rm == graph::kNoValue) != (*rv == graph::kNoValue)) return {};
  // native_batch_norm returns the statistics too; batch_norm (traced in inference mode, below no autograd)
  // the normalized input only.
  const bool with_statistics = n.op.operator_name().name == "aten::native_batch_norm";
  if (!n.args[6].constant.isDouble() || !n.args[7].constant.isDouble() || n.outputs.size() != (with_statistics ? 3u : 1u)) return {};
  if (with_statistics)
    for (size_t k : {1, 2})
      if (n.outputs[k].values.size() != 1 || !is_float_type(output_dtype(g, n, k))) return {};
  const auto s = shape_of(g, *x, /*any_layout=*/true);
  if (!s) return {};
  for (ValueId v : {*w, *b, *rm, *rv})
    if (v != graph::kNoValue &&
        (g.values[v].meta.dtype != s->dtype || plain_sizes(g.values[v].meta).size() != 0 || g.values[v].meta.sizes.size() != 1))
      return {};
  const double momentum = n.args[6].constant.toDouble(), eps = n.args[7].constant.toDouble();
  Ops ops(e, *s);
  const std::vector<int64_t> channels{s->channels};
  const ValueId xc = ops.computed(*x, s->sizes);
  const ValueId mean =
      e.call("aten::mean", "dim", {value_arg(xc), constant_arg(s->reduced), constant_arg(false), constant_arg(c10::IValue())}, s->compute,
             channels);
  const ValueId var = ops.variance(xc, 0);
  const ValueId shifted =
      e.call("aten::add", "Scalar", {value_arg(var), constant_arg(c10::Scalar(eps)), constant_arg(c10::Scalar(1))}, s->compute, channels);
  const ValueId invstd = e.call("aten::reciprocal", "", {value_arg(e.call("aten::sqrt", "", {value_arg(shifted)}, s->compute, channels))},
                                s->compute, channels);
  const ValueId alpha = *w == graph::kNoValue ? invstd : ops.binary("aten::mul", invstd, ops.computed(*w, channels), channels);
  const ValueId centre = ops.binary("aten::mul", mean, alpha, channels);
  const ValueId beta = *b == graph::kNoValue ? e.call("aten::neg", "", {value_arg(centre)}, s->compute, channels)
                                             : ops.binary("aten::sub", ops.computed(*b, channels), centre, channels);
  const ValueId out =
      ops.stored(ops.binary("aten::add", ops.binary("aten::mul", xc, ops.per_channel(alpha), s->sizes), ops.per_channel(beta), s->sizes),
                 s->dtype, s->sizes);
  if (n.outputs[0].values.size() == 1) e.lay_out_as(out, g.values[n.outputs[0].values[0]].meta);  // eager's layout
  if (*rm != graph::kNoValue) {
    ops.update(*rm, mean, momentum);
    // The unbiased variance as a reduction of its own (it fuses with the biased one's), not the biased
    // one scaled by n / (n - 1): a constant of the batch size would keep two traces at different batch
    // sizes from generalizing to one graph.
    ops.update(*rv, ops.variance(xc, 1), momentum);
  }
  if (!with_statistics) return {out};
  return {out, ops.stored(mean, output_dtype(g, n, 1), channels), ops.stored(invstd, output_dtype(g, n, 2), channels)};
}

std::vector<ValueId> batch_norm_backward(Emitter& e, const Graph& g, const Node& n, bool integer_counts) {
  if (n.args.size() < 10 || !n.args[7].constant.isBool() || !n.args[7].constant.toBool()) return {};
  const auto dy = optional_value(n, 0), x = optional_value(n, 1), w = optional_value(n, 2), mean = optional_value(n, 5),
             invstd = optional_value(n, 6);
  if (!dy || !x || !w || !mean || !invstd || *dy == graph::kNoValue || *x == graph::kNoValue || *mean == graph::kNoValue ||
      *invstd == graph::kNoValue || n.outputs.size() != 3)
    return {};
  const auto s = shape_of(g, *x, /*any_layout=*/true);
  // dy may be laid out otherwise (the expanded gradient of a sum): it is only read.
  if (!s || g.values[*dy].meta.sizes != g.values[*x].meta.sizes || g.values[*dy].meta.dtype != s->dtype) return {};
  if (*w != graph::kNoValue && (g.values[*w].meta.dtype != s->dtype || g.values[*w].meta.sizes.size() != 1)) return {};
  for (ValueId v : {*mean, *invstd})
    if (!is_float_type(g.values[v].meta.dtype) || g.values[v].meta.sizes.size() != 1) return {};
  Ops ops(e, *s);
  const std::vector<int64_t> channels{s->channels};
  const ValueId dyc = ops.computed(*dy, s->sizes), xc = ops.computed(*x, s->sizes);
  const ValueId meanc = ops.computed(*mean, channels), invstdc = ops.computed(*invstd, channels);
  const ValueId sum_dy = ops.sum(dyc);
  const ValueId centred = ops.binary("aten::sub", xc, ops.per_channel(meanc), s->sizes);
  const ValueId dot = ops.sum(ops.binary("aten::mul", centred, dyc, s->sizes));
  std::vector<ValueId> results;
  if (!n.outputs[0].values.empty()) {
    const ValueId k =
        ops.per_count(ops.binary("aten::mul", ops.binary("aten::mul", dot, invstdc, channels), invstdc, channels), integer_counts);
    const ValueId grad_mean = ops.per_count(sum_dy, integer_counts);
    ValueId dx = ops.binary("aten::sub", ops.binary("aten::sub", dyc, ops.per_channel(grad_mean), s->sizes),
                            ops.binary("aten::mul", centred, ops.per_channel(k), s->sizes), s->sizes);
    dx = ops.binary("aten::mul", dx, ops.per_channel(invstdc), s->sizes);
    if (*w != graph::kNoValue) dx = ops.binary("aten::mul", dx, ops.per_channel(ops.computed(*w, channels)), s->sizes);
    results.push_back(ops.stored(dx, output_dtype(g, n, 0), s->sizes));
  }
  if (!n.outputs[1].values.empty())
    results.push_back(ops.stored(ops.binary("aten::mul", dot, invstdc, channels), output_dtype(g, n, 1), channels));
  if (!n.outputs[2].values.empty()) results.push_back(ops.stored(sum_dy, output_dtype(g, n, 2), channels));
  return results;
}

bool is_true(const Arg& a) { return a.kind == Arg::Kind::kConstant && a.constant.isBool() && a.constant.toBool(); }

// cuDNN's backward formula reads the reserve space through a clone (derivatives.yaml: result3.clone()
// when the graph is retained) or an alias: such a copy becomes an empty tensor of its meta, read by
// nothing once the backward is native (DCE drops it).
bool aliases_reserve(const Node& n, const std::vector<char>& reserve) {
  const auto& returns = n.op.schema().returns();
  const std::string& name = n.op.operator_name().name;
  const bool copies = name == "aten::clone" || name == "aten::contiguous" || (!returns.empty() && returns[0].alias_info());
  return copies && n.outputs.size() == 1 && n.outputs[0].values.size() == 1 && !n.args.empty() && n.args[0].kind == Arg::Kind::kValue &&
         reserve[n.args[0].value];
}

void make_empty(Graph& g, Node& n) {
  const auto& meta = g.values[n.outputs[0].values[0]].meta;
  std::vector<int64_t> sizes;
  for (const auto& e : meta.sizes) sizes.push_back(e.offset);
  n.op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::empty", "memory_format");
  n.args = {constant_arg(c10::IValue(sizes)), constant_arg(c10::IValue(static_cast<int64_t>(meta.dtype))),
            constant_arg(c10::IValue()),      constant_arg(c10::IValue(meta.device)),
            constant_arg(c10::IValue()),      constant_arg(c10::IValue())};
}

}  // namespace

graph::Graph native_batch_norms(const graph::Graph& joint) {
  Graph g = joint;
  auto& dispatcher = c10::Dispatcher::singleton();
  std::vector<char> reserve(g.values.size(), 0);  // the reserve spaces of the rewritten forwards, and their aliases
  for (auto& n : g.nodes) {
    if (aliases_reserve(n, reserve)) {
      reserve[n.outputs[0].values[0]] = 1;
      make_empty(g, n);
      continue;
    }
    if (n.op.operator_name().name != "aten::cudnn_batch_norm" || n.outputs.size() != 4 || n.args.size() != 8 || !is_true(n.args[5]) ||
        n.args[0].kind != Arg::Kind::kValue)
      continue;
    n.op = dispatcher.findSchemaOrThrow("aten::native_batch_norm", "");
    for (ValueId v : n.outputs[3].values) reserve[v] = 1, g.values[v].producer = -1;
    n.outputs.resize(3);
  }
  for (auto& n : g.nodes) {
    const bool pairs = n.op.operator_name().name == "aten::cudnn_batch_norm_backward" && n.args.size() == 9 &&
                       n.args[8].kind == Arg::Kind::kValue && reserve[n.args[8].value];
    if (!pairs) continue;
    n.op = dispatcher.findSchemaOrThrow("aten::native_batch_norm_backward", "");
    // (x, dy, w, running_mean, running_var, save_mean, save_invstd, eps, reserve) ->
    // (dy, x, w, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask)
    n.args = {n.args[1], n.args[0], n.args[2],          n.args[3], n.args[4],
              n.args[5], n.args[6], constant_arg(true), n.args[7], constant_arg(c10::IValue(c10::List<bool>({true, true, true})))};
  }
  // A reserve space (or an alias of it) read by anything else: nothing is rewritten.
  for (const auto& n : g.nodes)
    for (const auto& a : n.args)
      if (a.kind == Arg::Kind::kValue && reserve[a.value]) return joint;
  for (ValueId v : g.outputs)
    if (v != graph::kNoValue && reserve[v]) return joint;
  return g;
}

graph::Graph decompose_batch_norm_training(const graph::Graph& g, bool integer_counts) {
  return decompose(g, [integer_counts](Emitter& e, const Graph& original, const Node& n) -> std::vector<ValueId> {
    const std::string& name = n.op.operator_name().name;
    if (name == "aten::native_batch_norm" || name == "aten::batch_norm") return batch_norm_forward(e, original, n);
    if (name == "aten::native_batch_norm_backward") return batch_norm_backward(e, original, n, integer_counts);
    return {};
  });
}

}  // namespace jitc::inductor
