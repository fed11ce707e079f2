#include "inductor/frozen_weights.h"

#include "graph/args.h"
#include "graph/passes.h"
#include "inductor/graph_uses.h"

#include <ATen/Context.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace jitc::inductor {

namespace {

using graph::Arg;
using graph::Graph;
using graph::Node;
using graph::TensorMeta;
using graph::ValueId;

// The operands of a product by a transposed captured weight: x @ w.t() (+ bias).
struct Linear {
  Arg x, weight, bias;
};

bool contiguous(const TensorMeta& m) {
  const auto sizes = graph::constant_values(m.sizes), strides = graph::constant_values(m.strides);
  if (!sizes || !strides) return false;
  int64_t expected = 1;
  for (size_t d = sizes->size(); d-- > 0;) {
    if ((*sizes)[d] != 1 && (*strides)[d] != expected) return false;
    expected *= (*sizes)[d];
  }
  return true;
}

class LinearFreezing {
 public:
  explicit LinearFreezing(const Graph& g) : g_(g), inputs_(g), readers_(readers_by_value(g)) {}

  // A product by a transposed captured weight, or the sum of one (read by nothing else) and a bias: LibTorch's
  // C++ Linear on a non-contiguous 3-D input (an LSTM's batch-first output) runs matmul then add_. The
  // bias then goes to oneDNN too, whose GEMM adds it: the product is not written and read again.
  std::optional<Linear> applies(const Node& n) const {
    auto linear = product_plus_bias(n);
    if (!linear) linear = product(n);
    if (!linear || !worth_prepacking(linear->weight)) return std::nullopt;
    return linear;
  }

  ValueId emit(Emitter& e, const Linear& l, const TensorMeta& out) const {
    // Packed for the rows of x where they are known (oneDNN's layout may depend on them), for any otherwise.
    c10::IValue rows;
    if (const auto xs = graph::constant_values(g_.values[l.x.value].meta.sizes)) {
      int64_t product = 1;
      for (size_t d = 0; d + 1 < xs->size(); ++d) product *= (*xs)[d];
      rows = product;
    }
    const ValueId packed = emit_derived(e, "mkldnn::_reorder_linear_weight", "", {l.weight, graph::constant_arg(rows)},
                                        *graph::constant_values(g_.values[l.weight.value].meta.sizes));
    const c10::List<std::optional<c10::Scalar>> no_scalars;
    return e.call("mkldnn::_linear_pointwise", "",
                  {l.x, graph::value_arg(packed), l.bias, graph::constant_arg(std::string("none")), graph::constant_arg(no_scalars),
                   graph::constant_arg(std::string())},
                  out);
  }

  // x @ w.t() (mm, matmul) or addmm(bias, x, w.t()).
  std::optional<Linear> product(const Node& n) const {
    const auto& name = n.op.operator_name();
    if (!name.overload_name.empty() || n.mutates || n.outputs.size() != 1 || n.outputs[0].values.size() != 1) return std::nullopt;
    Linear l;
    if (name.name == "aten::addmm" && n.args.size() == 5 && graph::is_one(n.args[3]) && graph::is_one(n.args[4]))
      l = {n.args[1], n.args[2], n.args[0]};
    else if ((name.name == "aten::mm" || name.name == "aten::matmul") && n.args.size() == 2)
      l = {n.args[0], n.args[1], graph::constant_arg(c10::IValue())};
    else return std::nullopt;
    if (l.x.kind != Arg::Kind::kValue || l.weight.kind != Arg::Kind::kValue) return std::nullopt;
    const std::optional<ValueId> w = transposed_weight(l.weight.value);
    if (!w) return std::nullopt;
    l.weight = graph::value_arg(*w);
    const TensorMeta &x = g_.values[l.x.value].meta, &out = g_.values[n.outputs[0].values[0]].meta;
    const auto ws = graph::constant_values(g_.values[*w].meta.sizes);
    if (x.sizes.size() < 2 || !x.sizes.back().is_constant() || x.sizes.back().offset != (*ws)[1]) return std::nullopt;
    if (x.dtype != c10::kFloat || !x.device.is_cpu()) return std::nullopt;
    // Leading dims may be symbolic (a dynamic batch): these ops' results are contiguous whatever the sizes.
    if (graph::constant_values(out.sizes) && !contiguous(out)) return std::nullopt;
    if (!is_none(l.bias) && !per_output(l.bias, (*ws)[0])) return std::nullopt;
    return l;
  }

  // add(x @ w.t(), bias) where only the add reads the product.
  std::optional<Linear> product_plus_bias(const Node& add) const {
    const auto& name = add.op.operator_name();
    if (name.name != "aten::add" || name.overload_name != "Tensor" || add.mutates || add.args.size() != 3 || !graph::is_one(add.args[2]) ||
        add.args[0].kind != Arg::Kind::kValue)
      return std::nullopt;
    const ValueId sum = add.outputs[0].values[0], p = add.args[0].value;
    const int producer = g_.values[p].producer;
    if (producer < 0 || readers_[p].size() != 1 || std::count(g_.outputs.begin(), g_.outputs.end(), p) > 0) return std::nullopt;
    std::optional<Linear> l = product(g_.nodes[producer]);
    const TensorMeta& out = g_.values[sum].meta;
    if (!l || !is_none(l->bias) || out.sizes != g_.values[p].meta.sizes || out.dtype != c10::kFloat || !contiguous(out))
      return std::nullopt;
    const auto out_features = graph::constant_values(g_.values[l->weight.value].meta.sizes);
    if (!per_output(add.args[1], (*out_features)[0])) return std::nullopt;
    l->bias = add.args[1];
    return l;
  }

 private:
  // w where v = t(w) (or transpose(w, 0, 1)) of a captured, unwritten 2-D weight.
  std::optional<ValueId> transposed_weight(ValueId v) const {
    const int p = g_.values[v].producer;
    if (p < 0) return std::nullopt;
    const Node& t = g_.nodes[p];
    const auto& name = t.op.operator_name();
    const bool transposes = (name.name == "aten::t" && name.overload_name.empty()) ||
                            (name.name == "aten::transpose" && name.overload_name == "int" &&
                             (t.args[1].constant.toInt() + 2) % 2 != (t.args[2].constant.toInt() + 2) % 2);
    if (!transposes || !inputs_.frozen(t.args[0], 2)) return std::nullopt;
    return t.args[0].value;
  }

  // oneDNN's linear makes its descriptors and attributes anew on every call, a fixed cost that ATen's GEMM
  // does not pay: below about 2^18 weight elements (512 x 512) the prepacked product lost to ATen's at
  // small batches and gained little at larger ones (RESULTS.md, session 49, measures where).
  bool worth_prepacking(const Arg& weight) const {
    constexpr int64_t kMinWeightElements = int64_t{1} << 18;
    const auto sizes = graph::constant_values(g_.values[weight.value].meta.sizes);
    return sizes && (*sizes)[0] * (*sizes)[1] >= kMinWeightElements;
  }

  // A dense float32 CPU vector of n values.
  bool per_output(const Arg& b, int64_t n) const {
    if (b.kind != Arg::Kind::kValue) return false;
    const TensorMeta& m = g_.values[b.value].meta;
    const auto s = graph::constant_values(m.sizes);
    return m.dtype == c10::kFloat && m.device.is_cpu() && s && s->size() == 1 && (*s)[0] == n && contiguous(m);
  }

  const Graph& g_;
  FrozenInputs inputs_;
  std::vector<std::vector<int>> readers_;
};

}  // namespace

Graph freeze_linears(const Graph& g) {
  if (!at::hasMKLDNN() || !at::globalContext().userEnabledMkldnn()) return g;
  const LinearFreezing freezing(g);
  if (std::none_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return freezing.applies(n).has_value(); })) return g;
  const Graph r = decompose(g, [&](Emitter& e, const Graph& original, const Node& n) -> std::vector<ValueId> {
    const auto linear = freezing.applies(n);
    if (!linear) return {};
    return {freezing.emit(e, *linear, original.values[n.outputs[0].values[0]].meta)};
  });
  return graph::eliminate_dead_code(r);  // the transposed weights
}

}  // namespace jitc::inductor
