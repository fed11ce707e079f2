#include "inductor/channels_last.h"

#include "graph/renumber.h"
#include "inductor/frozen_weights.h"
#include "inductor/graph_uses.h"
#include "inductor/lowering.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

namespace jitc::inductor {

namespace {

bool static_4d(const graph::TensorMeta& m) {
  auto constant = [](const graph::SymExpr& e) { return e.is_constant(); };
  return m.sizes.size() == 4 && std::all_of(m.sizes.begin(), m.sizes.end(), constant) &&
         std::all_of(m.strides.begin(), m.strides.end(), constant);
}

}  // namespace

bool static_float_4d_cpu(const graph::TensorMeta& m) { return static_4d(m) && m.dtype == c10::kFloat && m.device.is_cpu(); }

namespace {

// What a convolution library computes channels-last: oneDNN float32 on the CPU, cuDNN half and bfloat16
// on CUDA (where its tensor-core kernels are NHWC: given NCHW operands, it transposes them and its result
// inside every convolution).
bool channels_last_capable(const graph::TensorMeta& m) {
  const bool half_cuda = m.device.is_cuda() && (m.dtype == c10::kHalf || m.dtype == c10::kBFloat16);
  return static_float_4d_cpu(m) || (static_4d(m) && half_cuda);
}

bool library_enabled(c10::DeviceType device) {
  if (device == c10::DeviceType::CPU) return at::hasMKLDNN() && at::globalContext().userEnabledMkldnn();
  return device == c10::DeviceType::CUDA && at::detail::getCUDAHooks().compiledWithCuDNN() && at::globalContext().userEnabledCuDNN();
}

// conv2d(input, weight, bias?, stride, padding, dilation, groups): the int[2] argument a as two values.
std::optional<std::vector<int64_t>> pair_of(const graph::Node& n, size_t a) {
  if (n.args[a].kind != graph::Arg::Kind::kConstant || !n.args[a].constant.isIntList()) return std::nullopt;
  std::vector<int64_t> v = n.args[a].constant.toIntVector();
  if (v.size() == 1) v.push_back(v[0]);
  return v.size() == 2 ? std::optional(v) : std::nullopt;
}

// ATen's use_mkldnn for a float32 CPU conv2d, negated: where ATen runs its own kernel, not oneDNN's.
bool aten_runs_native_kernel(const std::vector<int64_t>& input, const std::vector<int64_t>& weight, bool strided_or_dilated,
                             int64_t groups) {
  const bool one_by_one = weight[2] == 1 && weight[3] == 1;
  if (one_by_one && !strided_or_dilated && input[0] < 16 && at::get_num_threads() == 1) return true;
  const bool large_kernel = weight[2] > 3 && weight[3] > 3;
  return groups == 1 && !large_kernel && input[0] <= 1 && input[0] * input[1] * input[2] * input[3] <= 20480;
}

}  // namespace

bool native_convolution_is_faster(const graph::Graph& g, const graph::Node& n) {
  if (n.op.operator_name().name != "aten::conv2d" || n.args.size() != 7 || n.outputs.size() != 1 || n.outputs[0].values.size() != 1)
    return false;
  const auto stride = pair_of(n, 3), dilation = pair_of(n, 5);
  const graph::Arg& groups = n.args[6];
  if (!stride || !dilation || groups.kind != graph::Arg::Kind::kConstant || !groups.constant.isInt()) return false;
  if (n.args[0].kind != graph::Arg::Kind::kValue || n.args[1].kind != graph::Arg::Kind::kValue) return false;
  if (!static_float_4d_cpu(g.values[n.args[0].value].meta)) return false;
  const auto input = graph::constant_values(g.values[n.args[0].value].meta.sizes);
  const auto weight = graph::constant_values(g.values[n.args[1].value].meta.sizes);
  const auto output = graph::constant_values(g.values[n.outputs[0].values[0]].meta.sizes);
  if (!weight || !output || weight->size() != 4 || output->size() != 4) return false;
  const bool strided_or_dilated = (*stride)[0] != 1 || (*stride)[1] != 1 || (*dilation)[0] != 1 || (*dilation)[1] != 1;
  if (!aten_runs_native_kernel(*input, *weight, strided_or_dilated, groups.constant.toInt())) return false;
  const int64_t multiply_adds = (*output)[0] * (*output)[1] * (*output)[2] * (*output)[3] * (*weight)[1] * (*weight)[2] * (*weight)[3];
  constexpr int64_t kMaxNativeMultiplyAdds = int64_t{1} << 20;
  return multiply_adds < kMaxNativeMultiplyAdds;
}

// [N, C, H, W] stored as [N, H, W, C].
graph::SymShape channels_last_strides(const graph::SymShape& sizes) {
  const int64_t c = sizes[1].offset, h = sizes[2].offset, w = sizes[3].offset;
  using graph::SymExpr;
  return {SymExpr::constant(h * w * c), SymExpr::constant(1), SymExpr::constant(w * c), SymExpr::constant(c)};
}

graph::ValueId append_channels_last_clone(graph::Graph& r, std::vector<graph::Node>& nodes, graph::ValueId v, int32_t storage) {
  static const c10::OperatorHandle clone = c10::Dispatcher::singleton().findSchemaOrThrow("aten::clone", "");
  graph::TensorMeta meta = r.values[v].meta;
  meta.strides = channels_last_strides(meta.sizes);
  meta.storage_offset = graph::SymExpr::constant(0);
  const graph::ValueId c = r.add_value(meta, static_cast<int32_t>(nodes.size()), storage);
  graph::Node n(clone);
  graph::Arg self;
  self.kind = graph::Arg::Kind::kValue;
  self.value = v;
  graph::Arg format;
  format.constant = c10::IValue(c10::MemoryFormat::ChannelsLast);
  n.args = {self, format};
  n.outputs = {graph::NodeOutput{false, {c}}};
  nodes.push_back(std::move(n));
  return c;
}

std::unordered_map<int32_t, int> values_per_storage(const graph::Graph& g) {
  std::unordered_map<int32_t, int> count;
  for (const auto& v : g.values)
    if (v.storage >= 0) ++count[v.storage];
  return count;
}

namespace {

using graph::Graph;
using graph::Node;
using graph::SymExpr;
using graph::SymShape;
using graph::TensorMeta;
using graph::ValueId;

class Rewrite {
 public:
  explicit Rewrite(const Graph& g)
      : g_(g), users_(readers_by_value(g)), sharers_(values_per_storage(g)), prepackable_(prepackable_convolutions(g)) {}

  bool applies(const Node& n) const {
    if (n.op.operator_name().name != "aten::conv2d" || n.args.size() < 2 || n.outputs.size() != 1 || n.outputs[0].values.size() != 1)
      return false;
    for (size_t a : {0, 1})
      if (n.args[a].kind != graph::Arg::Kind::kValue || !channels_last_capable(g_.values[n.args[a].value].meta)) return false;
    const c10::Device device = g_.values[n.args[0].value].meta.device;
    if (g_.values[n.args[1].value].meta.device != device || !library_enabled(device.type())) return false;
    if (native_convolution_is_faster(g_, n)) return false;
    // A prepacked weight (frozen_weights.h) is not reordered per call: oneDNN is then faster on
    // channels-last operands whatever the ratio, and returns channels-last whatever the input's layout.
    if (device.is_cpu() && !activations_outweigh_weights(n) && !prepackable_[&n - g_.nodes.data()]) return false;
    const ValueId out = n.outputs[0].values[0];
    const graph::Value& v = g_.values[out];
    if (!channels_last_capable(v.meta) || std::count(g_.outputs.begin(), g_.outputs.end(), out) > 0) return false;
    if (shared(v)) return false;
    return std::all_of(users_[out].begin(), users_[out].end(), [&](int u) { return reads_through_strides(g_.nodes[u]); });
  }

  // A convolution's input that a kernel computes is computed in channels-last layout itself, where
  // every reader reads it through its strides (kernels, and convolutions as their input): no copy, and
  // no second store of it for a second reader (a residual), as Inductor lays out every value between
  // convolutions channels-last.
  bool relaid_in_place(ValueId v) const {
    const graph::Value& value = g_.values[v];
    if (value.producer < 0 || !reads_through_strides(g_.nodes[value.producer]) || shared(value)) return false;
    if (!channels_last_capable(value.meta) || std::count(g_.outputs.begin(), g_.outputs.end(), v) > 0) return false;
    return std::all_of(users_[v].begin(), users_[v].end(), [&](int u) {
      const Node& user = g_.nodes[u];
      const bool input_of_convolution =
          user.op.operator_name().name == "aten::conv2d" && user.args[0].value == v && user.args[1].value != v;
      return input_of_convolution || reads_through_strides(user);
    });
  }

  // Lowered ops read their inputs and write their outputs through the strides of their metadata.
  static bool reads_through_strides(const Node& n) { return !n.mutates && find_lowering(n) != nullptr && !is_view_lowering(n); }

  bool shared(const graph::Value& v) const { return v.storage >= 0 && sharers_.at(v.storage) > 1; }

  // Chosen by cost: oneDNN is faster on channels-last operands where the activations are large next to
  // the weight (early layers, large batches, depthwise convolutions), and slower where the weight
  // dominates (late layers at small batches), where it reorders a channels-last weight on every call.
  // The measured crossover lies between ratios 0.8 and 5 (benchmarks/RESULTS.md, session 20).
  bool activations_outweigh_weights(const Node& n) const {
    auto numel = [&](size_t a) { return graph::constant_numel(g_.values[n.args[a].value].meta.sizes).value_or(0); };
    return numel(0) >= 2 * numel(1);
  }

  Graph run() {
    Graph r = g_;
    r.nodes.clear();
    int32_t next_storage = 0;
    for (const auto& v : g_.values) next_storage = std::max(next_storage, v.storage + 1);
    std::map<ValueId, ValueId> converted;
    // CUDA weights that are graph inputs (parameters) are copied first, together: kernels with no extern
    // call between them may run as one combo kernel (cuda/combos.h), one launch for all the copies.
    for (const Node& n : g_.nodes) {
      if (!applies(n) || !g_.values[n.args[1].value].meta.device.is_cuda() || g_.values[n.args[1].value].producer >= 0) continue;
      if (!converted.count(n.args[1].value)) converted[n.args[1].value] = weight_in_channels_last(r, n.args[1].value, next_storage);
    }
    for (const Node& original : g_.nodes) {
      Node n = original;
      if (applies(original)) {
        // On the CPU the input only: a channels-last input makes oneDNN compute and return channels-last,
        // and it reorders the weight into its own blocked layout on every call whatever the weight's
        // layout, so a channels-last copy of the weight would be one more copy per call. cuDNN computes in
        // the weight's layout where its input's differs, copying the input: both go channels-last. The
        // weight is copied on every call, not derived once as on the CPU: a derived value sees a write
        // through `.data()` by sampling the weight's elements (runtime/derived_values.h), which on the GPU
        // would cost a synchronizing read per call.
        const ValueId v = n.args[0].value;
        if (!converted.count(v)) converted[v] = relaid_in_place(v) ? relaid(r, v) : in_channels_last(r, v, next_storage);
        n.args[0].value = converted[v];
        const ValueId w = n.args[1].value;
        if (r.values[w].meta.device.is_cuda() && !converted.count(w)) converted[w] = weight_in_channels_last(r, w, next_storage);
        if (r.values[w].meta.device.is_cuda()) n.args[1].value = converted[w];
        TensorMeta& out = r.values[n.outputs[0].values[0]].meta;
        out.strides = channels_last_strides(out.sizes);
      }
      r.nodes.push_back(std::move(n));
    }
    return graph::renumbered(r);
  }

 private:
  // v itself where it is channels-last already, else a channels-last clone of it.
  static ValueId in_channels_last(Graph& r, ValueId v, int32_t& next_storage) {
    return channels_last(r.values[v].meta) ? v : append_channels_last_clone(r, r.nodes, v, next_storage++);
  }

  // A weight whose memory is laid out channels-last already but for the strides of its dims of size 1
  // (1x1 and depthwise weights, [O, I, 1, 1] and [C, 1, 3, 3], as stored): ATen's contiguous(ChannelsLast)
  // returns such a tensor itself, and cuDNN reads it as channels-last next to a channels-last input.
  static ValueId weight_in_channels_last(Graph& r, ValueId w, int32_t& next_storage) {
    const TensorMeta& m = r.values[w].meta;
    const graph::SymShape cl = channels_last_strides(m.sizes);
    bool same_memory = m.storage_offset.is_constant();
    for (size_t d = 0; d < 4; ++d) same_memory = same_memory && (m.sizes[d].offset == 1 || m.strides[d] == cl[d]);
    return same_memory ? w : in_channels_last(r, w, next_storage);
  }

  static ValueId relaid(Graph& r, ValueId v) {
    r.values[v].meta.strides = channels_last_strides(r.values[v].meta.sizes);
    return v;
  }

  static bool channels_last(const TensorMeta& m) { return channels_last_capable(m) && m.strides == channels_last_strides(m.sizes); }

 public:
  // Values between convolutions follow their inputs' layout: a kernel reading a channels-last value
  // (a convolution's output, or a value that follows one) writes channels-last where relaid_in_place
  // allows, as Inductor's pointwise ops keep their input's layout. A UNet's skip connection, a batch
  // norm's output that a max pool and, later, a cat read, was written in the traced layout: both of its
  // kernels then read or wrote across layouts.
  static Graph following_inputs(Graph g) {
    const Rewrite in(g);
    for (const Node& n : g.nodes) {
      if (!reads_through_strides(n)) continue;
      const bool channels_last_input = std::any_of(n.args.begin(), n.args.end(), [&](const graph::Arg& a) {
        return a.kind == graph::Arg::Kind::kValue && channels_last(g.values[a.value].meta);
      });
      if (!channels_last_input) continue;
      for (const auto& output : n.outputs)
        for (ValueId v : output.values)
          if (in.relaid_in_place(v) && in.convolutions_reading_compute_channels_last(v)) relaid(g, v);
    }
    return g;
  }

 private:
  // oneDNN computes in its input's layout: a convolution left in the traced layout (the weight
  // outweighs its activations) would return channels-last where its metadata says otherwise.
  bool convolutions_reading_compute_channels_last(ValueId v) const {
    return std::all_of(users_[v].begin(), users_[v].end(), [&](int u) {
      const Node& user = g_.nodes[u];
      return user.op.operator_name().name != "aten::conv2d" || channels_last(g_.values[user.outputs[0].values[0]].meta);
    });
  }

  const Graph& g_;
  std::vector<std::vector<int>> users_;
  std::unordered_map<int32_t, int> sharers_;
  std::vector<bool> prepackable_;  // per node of g_
};

}  // namespace

Graph convolutions_in_channels_last(const Graph& g) {
  Rewrite rewrite(g);
  if (std::none_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return rewrite.applies(n); })) return g;
  return Rewrite::following_inputs(rewrite.run());
}

}  // namespace jitc::inductor
