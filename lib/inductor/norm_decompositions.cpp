// linalg_vector_norm over some dims (the rows of x.norm(2, -1)) as a reduction that fuses with what reads
// it, as Inductor decomposes it; eager writes the norms and reads them back.
#include "inductor/decompositions.h"

#include "graph/args.h"
#include "inductor/emitter.h"

#include <c10/core/Scalar.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

namespace jitc::inductor {

namespace {

using graph::Arg;
using graph::constant_arg;
using graph::Graph;
using graph::Node;
using graph::value_arg;
using graph::ValueId;

// The norms decomposed: ord 1, 2 and inf over floating tensors.
enum class Order { kOne, kTwo, kInf };

std::optional<Order> order_of(const c10::IValue& ord) {
  if (!ord.isScalar()) return std::nullopt;
  const c10::Scalar s = ord.toScalar();
  if (s.isComplex()) return std::nullopt;
  const double p = s.toDouble();
  if (p == 1) return Order::kOne;
  if (p == 2) return Order::kTwo;
  if (p == std::numeric_limits<double>::infinity()) return Order::kInf;
  return std::nullopt;
}

// The dims reduced (every dim for None or []), normalized; nullopt for a dim out of range.
std::optional<std::vector<int64_t>> reduced_dims(const c10::IValue& dim, int64_t rank) {
  std::vector<int64_t> dims;
  if (!dim.isNone()) {
    if (!dim.isIntList()) return std::nullopt;
    for (int64_t d : dim.toIntVector()) {
      if (d < -std::max<int64_t>(rank, 1) || d >= std::max<int64_t>(rank, 1)) return std::nullopt;
      dims.push_back(d < 0 ? d + rank : d);
    }
  }
  if (dims.empty())
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  std::sort(dims.begin(), dims.end());
  if (std::adjacent_find(dims.begin(), dims.end()) != dims.end()) return std::nullopt;  // eager raises
  return dims;
}

// linalg_vector_norm(x, ord, dim, keepdim, dtype=None) over a floating x of static sizes with elements.
// Half and bfloat16 compute in float32 and round the norm once, as eager's norm kernel accumulates.
std::optional<ValueId> vector_norm(Emitter& e, const Graph& g, const Node& n) {
  if (n.op.operator_name().name != "aten::linalg_vector_norm" || n.mutates || n.args.size() != 5) return std::nullopt;
  const Arg &x = n.args[0], &ord = n.args[1], &dim = n.args[2], &keepdim = n.args[3], &dtype = n.args[4];
  if (x.kind != Arg::Kind::kValue || ord.kind != Arg::Kind::kConstant || dim.kind != Arg::Kind::kConstant) return std::nullopt;
  if (!keepdim.constant.isBool() || !dtype.constant.isNone()) return std::nullopt;
  const graph::TensorMeta& m = g.values[x.value].meta;
  const c10::ScalarType t = m.dtype;
  if (t != c10::kFloat && t != c10::kDouble && t != c10::kHalf && t != c10::kBFloat16) return std::nullopt;
  std::vector<int64_t> sizes;
  for (const auto& s : m.sizes) {
    if (!s.is_constant() || s.offset == 0) return std::nullopt;  // an empty tensor's inf norm raises in eager
    sizes.push_back(s.offset);
  }
  const auto order = order_of(ord.constant);
  const auto dims = reduced_dims(dim.constant, static_cast<int64_t>(sizes.size()));
  // A whole tensor's norm stays eager's op: as a kernel it is one row, reduced by one CPU thread, and on
  // CUDA the total of a gradient clipping's norms inlined them into one block (benchmarks/RESULTS.md,
  // session 25).
  if (!order || !dims || dims->size() == sizes.size()) return std::nullopt;
  std::vector<int64_t> out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!std::binary_search(dims->begin(), dims->end(), static_cast<int64_t>(d))) out.push_back(sizes[d]);
    else if (keepdim.constant.toBool()) out.push_back(1);
  }
  const c10::ScalarType compute = t == c10::kDouble ? c10::kDouble : c10::kFloat;
  const ValueId wide = t == compute ? x.value : e.cast(x.value, compute, sizes);
  const ValueId a = e.call("aten::abs", "", {value_arg(wide)}, compute, sizes);
  const ValueId term = *order == Order::kTwo ? e.call("aten::mul", "Tensor", {value_arg(a), value_arg(a)}, compute, sizes) : a;
  const std::vector<Arg> reduce_args = {value_arg(term), constant_arg(*dims), constant_arg(keepdim.constant.toBool())};
  ValueId norm =
      *order == Order::kInf
          ? e.call("aten::amax", "", reduce_args, compute, out)
          : e.call("aten::sum", "dim_IntList", {reduce_args[0], reduce_args[1], reduce_args[2], constant_arg(c10::IValue())}, compute, out);
  if (*order == Order::kTwo) norm = e.call("aten::sqrt", "", {value_arg(norm)}, compute, out);
  return t == compute ? norm : e.cast(norm, t, out);
}

}  // namespace

graph::Graph decompose_norms(const graph::Graph& g) {
  return decompose(g, [](Emitter& e, const Graph& original, const Node& n) -> std::vector<ValueId> {
    if (auto norm = vector_norm(e, original, n)) return {*norm};
    return {};
  });
}

}  // namespace jitc::inductor
