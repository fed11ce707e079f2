#include "inductor/channels_last.h"

#include "graph/renumber.h"
#include "inductor/lowering.h"

#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

namespace jitc::inductor {

namespace {

using graph::Graph;
using graph::Node;
using graph::SymExpr;
using graph::SymShape;
using graph::TensorMeta;
using graph::ValueId;

// A 4-D tensor of static shape of a dtype the device's convolution library runs in channels-last.
bool convertible(const TensorMeta& m, c10::DeviceType device) {
  if (m.sizes.size() != 4 || m.device.type() != device) return false;
  // cuDNN's float32 convolutions may round their inputs to TF32 (the default), each algorithm in its own
  // way: an NHWC convolution's result would then differ from eager's NCHW one by TF32's rounding, far
  // beyond float32's. Float32 is converted only where TF32 is off; half and bfloat16 round alike.
  const bool dtype_ok = device == c10::kCPU ? m.dtype == c10::kFloat
                                            : m.dtype == c10::kHalf || m.dtype == c10::kBFloat16 ||
                                                  (m.dtype == c10::kFloat && !at::globalContext().allowTF32CuDNN());
  auto constant = [](const SymExpr& e) { return e.is_constant(); };
  return dtype_ok && std::all_of(m.sizes.begin(), m.sizes.end(), constant) && std::all_of(m.strides.begin(), m.strides.end(), constant);
}

// [N, C, H, W] stored as [N, H, W, C].
SymShape channels_last_strides(const SymShape& sizes) {
  const int64_t c = sizes[1].offset, h = sizes[2].offset, w = sizes[3].offset;
  return {SymExpr::constant(h * w * c), SymExpr::constant(1), SymExpr::constant(w * c), SymExpr::constant(c)};
}

// Already stored channels-last (a 1x1 convolution's weight is both layouts at once): strides of size-1
// dims say nothing.
bool stored_channels_last(const TensorMeta& m) {
  const SymShape wanted = channels_last_strides(m.sizes);
  for (size_t d = 0; d < 4; ++d)
    if (m.sizes[d].offset != 1 && m.strides[d].offset != wanted[d].offset) return false;
  return true;
}

int64_t numel(const TensorMeta& m) {
  int64_t count = 1;
  for (const auto& e : m.sizes) count *= e.offset;
  return count;
}

bool is_conv2d(const Node& n) {
  return n.op.operator_name().name == "aten::conv2d" && n.args.size() >= 2 && n.outputs.size() == 1 && n.outputs[0].values.size() == 1 &&
         n.args[0].kind == graph::Arg::Kind::kValue && n.args[1].kind == graph::Arg::Kind::kValue;
}

int64_t groups_of(const Node& n) { return n.args.size() > 6 && n.args[6].constant.isInt() ? n.args[6].constant.toInt() : 1; }

class Rewrite {
 public:
  Rewrite(const Graph& g, c10::DeviceType device) : g_(g), device_(device), users_(g.values.size()), sharers_(g.values.size(), 0) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (const auto& a : g.nodes[i].args) {
        if (a.kind == graph::Arg::Kind::kValue) users_[a.value].push_back(static_cast<int>(i));
        for (ValueId v : a.list)
          if (v != graph::kNoValue) users_[v].push_back(static_cast<int>(i));
      }
    for (const auto& v : g.values)
      if (v.storage >= 0 && static_cast<size_t>(v.storage) < sharers_.size()) ++sharers_[v.storage];
  }

  bool applies(const Node& n) const {
    if (!is_conv2d(n)) return false;
    for (size_t a : {0, 1})
      if (!convertible(meta(n, a), device_)) return false;
    if (device_ == c10::kCPU && !activations_outweigh_weights(n)) return false;
    const ValueId out = n.outputs[0].values[0];
    const graph::Value& v = g_.values[out];
    if (!convertible(v.meta, device_) || std::count(g_.outputs.begin(), g_.outputs.end(), out) > 0) return false;
    if (v.storage >= 0 && static_cast<size_t>(v.storage) < sharers_.size() && sharers_[v.storage] > 1) return false;
    return std::all_of(users_[out].begin(), users_[out].end(), [&](int u) {
      const Node& user = g_.nodes[u];
      return !user.mutates && find_lowering(user) != nullptr && !is_view_lowering(user);
    });
  }

  Graph run() {
    Graph r = g_;
    r.nodes.clear();
    int32_t next_storage = 0;
    for (const auto& v : g_.values) next_storage = std::max(next_storage, v.storage + 1);
    std::map<ValueId, ValueId> converted;
    auto convert = [&](graph::Arg& arg) {
      if (!converted.count(arg.value)) converted[arg.value] = clone_channels_last(r, arg.value, next_storage++);
      arg.value = converted[arg.value];
    };
    for (const Node& original : g_.nodes) {
      Node n = original;
      if (applies(original)) {
        convert(n.args[0]);
        // On the CPU the input only: oneDNN reorders the weight into its own blocked layout on every call
        // whatever its layout, so a channels-last copy would be one more copy per call. cuDNN reads the
        // weight in the input's layout: an NCHW weight beside an NHWC input is transposed by the library
        // on every call, one kernel per convolution, where the copy here is one kernel for all of them
        // (combo kernels).
        if (device_ == c10::kCUDA && !stored_channels_last(meta(n, 1))) convert(n.args[1]);
        TensorMeta& out = r.values[n.outputs[0].values[0]].meta;
        out.strides = channels_last_strides(out.sizes);
      }
      r.nodes.push_back(std::move(n));
    }
    return graph::renumbered(r);
  }

  // On the GPU the layout is chosen for the whole graph, as Inductor's layout optimization does for
  // inference: the convolutions' FLOPs weighted by the average slowdown (> 1) or speedup (< 1)
  // channels-last brought to convolutions of their kind in Inductor's measurements over TorchBench's
  // convolutions (torch/_inductor/graph.py, decide_layout_opt). Grouped convolutions with more than one
  // input channel per group are the slow kind; depthwise ones are not.
  bool pays_on_gpu() const {
    double total = 0, weighted = 0;
    int64_t convolutions = 0;
    for (const Node& n : g_.nodes) {
      if (!is_conv2d(n) || !convertible(meta(n, 1), device_) || !convertible(g_.values[n.outputs[0].values[0]].meta, device_)) continue;
      const TensorMeta& w = meta(n, 1);
      const int64_t out_channels = w.sizes[0].offset, in_channels = w.sizes[1].offset, window = w.sizes[2].offset;
      const double flops =
          2.0 * static_cast<double>(numel(g_.values[n.outputs[0].values[0]].meta)) * static_cast<double>(numel(w) / out_channels);
      double factor = 0.823;
      if (groups_of(n) > 1 && in_channels > 1) factor = 1.358;
      else if (out_channels <= 64 && in_channels <= 64) factor = 0.783;
      else if (out_channels * 2 <= in_channels && window > 1) factor = 0.725;
      total += flops;
      weighted += flops * factor;
      ++convolutions;
    }
    // A graph of many other ops around a few convolutions (attention models with a convolutional stem)
    // keeps its layout, as in Inductor.
    if (convolutions == 0 || static_cast<int64_t>(g_.nodes.size()) >= 300 * convolutions) return false;
    return weighted <= total;
  }

  // On the CPU, chosen per convolution by cost: oneDNN is faster on channels-last operands where the
  // activations are large next to the weight (early layers, large batches, depthwise convolutions), and
  // slower where the weight dominates (late layers at small batches), where it reorders a channels-last
  // weight on every call. The measured crossover lies between ratios 0.8 and 5 (benchmarks/RESULTS.md,
  // session 20).
  bool activations_outweigh_weights(const Node& n) const { return numel(meta(n, 0)) >= 2 * numel(meta(n, 1)); }

 private:
  // Appends `clone(v, memory_format=channels_last)` to r: a pointwise copy to the lowering, which stores
  // it through the strides of its output's meta.
  static ValueId clone_channels_last(Graph& r, ValueId v, int32_t storage) {
    static const c10::OperatorHandle clone = c10::Dispatcher::singleton().findSchemaOrThrow("aten::clone", "");
    TensorMeta meta = r.values[v].meta;
    meta.strides = channels_last_strides(meta.sizes);
    meta.storage_offset = graph::SymExpr::constant(0);
    const ValueId c = r.add_value(meta, static_cast<int32_t>(r.nodes.size()), storage);
    Node n(clone);
    graph::Arg self;
    self.kind = graph::Arg::Kind::kValue;
    self.value = v;
    graph::Arg format;
    format.constant = c10::IValue(c10::MemoryFormat::ChannelsLast);
    n.args = {self, format};
    n.outputs = {graph::NodeOutput{false, {c}}};
    r.nodes.push_back(std::move(n));
    return c;
  }

  const TensorMeta& meta(const Node& n, size_t arg) const { return g_.values[n.args[arg].value].meta; }

  const Graph& g_;
  c10::DeviceType device_;
  std::vector<std::vector<int>> users_;
  std::vector<int> sharers_;
};

// The device of the graph's convolutions: CPU or CUDA with its library enabled, none otherwise.
std::optional<c10::DeviceType> convolution_device(const Graph& g) {
  for (const Node& n : g.nodes) {
    if (!is_conv2d(n)) continue;
    const c10::DeviceType device = g.values[n.args[0].value].meta.device.type();
    if (device == c10::kCPU && at::hasMKLDNN() && at::globalContext().userEnabledMkldnn()) return device;
    if (device == c10::kCUDA && at::globalContext().userEnabledCuDNN()) return device;
  }
  return std::nullopt;
}

}  // namespace

Graph convolutions_in_channels_last(const Graph& g) {
  const auto device = convolution_device(g);
  if (!device) return g;
  Rewrite rewrite(g, *device);
  if (*device == c10::kCUDA && !rewrite.pays_on_gpu()) return g;
  if (std::none_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return rewrite.applies(n); })) return g;
  return rewrite.run();
}

}  // namespace jitc::inductor
