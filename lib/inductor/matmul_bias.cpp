// A Linear layer's bias added to its product where no kernel would take the add: LibTorch's C++
// torch::nn::Linear records matmul then add_ for a 3-D input, and where the sum is read only by extern
// calls (a QKV projection split into attention's q, k and v) or returned, the add is a kernel of its own
// that reads and writes the whole product once more. There the pair becomes one addmm, whose GEMM adds
// the bias in its epilogue (cuBLASLt's on the GPU), as eager PyTorch's F.linear runs it. Where a kernel
// reads the sum, the add fuses into that kernel and stays: Inductor decides the same way
// (unfuse_bias_add_to_pointwise). The result differs from matmul-then-add by one rounding of the sum.
#include "inductor/decompositions.h"

#include "graph/args.h"
#include "graph/passes.h"
#include "inductor/emitter.h"
#include "inductor/graph_uses.h"
#include "inductor/lowering.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace jitc::inductor {

namespace {

using graph::Arg;
using graph::Graph;
using graph::Node;
using graph::TensorMeta;
using graph::ValueId;

// The product, bias and operands of an add the rewrite applies to.
struct BiasedProduct {
  ValueId x = graph::kNoValue, weight = graph::kNoValue, bias = graph::kNoValue;
};

// Sizes where all are constant; empty where one is symbolic (the rewrite takes no 0-dim value).
std::vector<int64_t> static_sizes(const TensorMeta& m) { return graph::constant_values(m.sizes).value_or(std::vector<int64_t>{}); }

// x viewed as [rows, k]: the Emitter's view metadata starts at offset 0.
bool viewable_as_rows(const TensorMeta& m) {
  return contiguous_static(m) && m.storage_offset.is_constant() && m.storage_offset.offset == 0;
}

bool gemm_dtype(c10::ScalarType t) { return t == c10::kFloat || t == c10::kDouble || t == c10::kHalf || t == c10::kBFloat16; }

class BiasFolding {
 public:
  explicit BiasFolding(const Graph& g) : g_(g), users_(readers_by_value(g)) {}

  // add(matmul(x, weight), bias): x contiguous of static sizes, weight 2-D, bias 1-D over the product's
  // last dim, one dtype, the product read by the add only, the sum read by no kernel.
  std::optional<BiasedProduct> applies(const Node& add) const {
    if (add.op.operator_name().name != "aten::add" || add.op.operator_name().overload_name != "Tensor" || add.mutates) return std::nullopt;
    if (add.args.size() != 3 || add.args[0].kind != Arg::Kind::kValue || add.args[1].kind != Arg::Kind::kValue ||
        !graph::is_one(add.args[2]))
      return std::nullopt;
    const ValueId product = add.args[0].value, bias = add.args[1].value;
    const graph::Value& p = g_.values[product];
    if (p.producer < 0 || users_[product].size() != 1 || is_output(product)) return std::nullopt;
    const Node& mm = g_.nodes[p.producer];
    const std::string name = mm.op.operator_name().name;
    if ((name != "aten::matmul" && name != "aten::mm") || mm.args.size() != 2) return std::nullopt;
    if (mm.args[0].kind != Arg::Kind::kValue || mm.args[1].kind != Arg::Kind::kValue) return std::nullopt;
    const TensorMeta &xm = g_.values[mm.args[0].value].meta, &wm = g_.values[mm.args[1].value].meta;
    const TensorMeta &bm = g_.values[bias].meta, &sum = g_.values[add.outputs[0].values[0]].meta;
    const std::vector<int64_t> xs = static_sizes(xm), ws = static_sizes(wm), bs = static_sizes(bm), ps = static_sizes(p.meta);
    if (xs.size() < 2 || ws.size() != 2 || bs.size() != 1 || ps.empty() || !viewable_as_rows(xm)) return std::nullopt;
    if (bs[0] != ws[1] || ps.back() != ws[1] || sum.sizes != p.meta.sizes || std::count(ps.begin(), ps.end(), 0) > 0) return std::nullopt;
    if (!gemm_dtype(p.meta.dtype) || xm.dtype != p.meta.dtype || wm.dtype != p.meta.dtype || bm.dtype != p.meta.dtype ||
        sum.dtype != p.meta.dtype)
      return std::nullopt;
    if (read_by_a_kernel(add.outputs[0].values[0])) return std::nullopt;
    return BiasedProduct{mm.args[0].value, mm.args[1].value, bias};
  }

 private:
  bool is_output(ValueId v) const { return std::count(g_.outputs.begin(), g_.outputs.end(), v) > 0; }

  // Whether generated code reads v, directly or through views: then the add fuses there.
  bool read_by_a_kernel(ValueId v) const {
    for (int u : users_[v]) {
      const Node& user = g_.nodes[u];
      if (!find_lowering(user)) continue;  // an extern call
      if (!is_view_lowering(user)) return true;
      for (ValueId out : node_outputs(user))
        if (read_by_a_kernel(out)) return true;
    }
    return false;
  }

  const Graph& g_;
  std::vector<std::vector<int>> users_;
};

// view(addmm(bias, view(x, [rows, k]), weight), sizes of the sum).
ValueId emit_addmm(Emitter& e, const Graph& g, const BiasedProduct& b, const std::vector<int64_t>& sum_sizes) {
  const TensorMeta& xm = g.values[b.x].meta;
  const std::vector<int64_t> xs = static_sizes(xm);
  const int64_t k = xs.back(), n = sum_sizes.back();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < xs.size(); ++d) rows *= xs[d];
  const c10::ScalarType t = xm.dtype;
  ValueId x2 = b.x;
  if (xs.size() != 2)
    x2 = e.call("aten::view", "", {graph::value_arg(b.x), graph::constant_arg(std::vector<int64_t>{rows, k})}, t, {rows, k});
  const ValueId product = e.call("aten::addmm", "",
                                 {graph::value_arg(b.bias), graph::value_arg(x2), graph::value_arg(b.weight),
                                  graph::constant_arg(int64_t{1}), graph::constant_arg(int64_t{1})},
                                 t, {rows, n});
  if (sum_sizes.size() == 2) return product;
  return e.call("aten::view", "", {graph::value_arg(product), graph::constant_arg(sum_sizes)}, t, sum_sizes);
}

}  // namespace

Graph fold_biases_into_matmuls(const Graph& g) {
  const BiasFolding folding(g);
  if (std::none_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return folding.applies(n).has_value(); })) return g;
  const Graph r = decompose(g, [&](Emitter& e, const Graph& original, const Node& n) -> std::vector<ValueId> {
    const auto biased = folding.applies(n);
    if (!biased) return {};
    return {emit_addmm(e, original, *biased, static_sizes(original.values[n.outputs[0].values[0]].meta))};
  });
  return graph::eliminate_dead_code(r);  // the matmuls whose products only the adds read
}

}  // namespace jitc::inductor
