// Lowerings of reductions (sum, mean, prod, amax/amin, max/min with indices, argmax/argmin, var/std/
// var_mean, logsumexp, any/all) and of the normalizations built on them (softmax, log_softmax,
// layer_norm, group_norm, batch_norm in inference). A reduction runs its own loop inside a kernel row,
// so it fuses with its pointwise prologue (what it reads) and epilogue (what reads it, per row): softmax
// and layer_norm become one kernel each.
#include "inductor/lowering.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace jitc::inductor {

namespace {

using c10::ScalarType;
using graph::Node;
using graph::SymExpr;
using graph::SymShape;
using graph::ValueId;
using Element = std::function<int(KernelBuilder&, const Index&)>;

std::vector<int64_t> normalize_dims(std::vector<int64_t> dims, size_t rank) {
  if (dims.empty())
    for (size_t d = 0; d < rank; ++d) dims.push_back(static_cast<int64_t>(d));
  for (auto& d : dims) {
    if (d < 0) d += static_cast<int64_t>(rank);
    if (d < 0 || (d >= static_cast<int64_t>(rank) && rank > 0)) throw Unsupported("reduction dim out of range");
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  if (rank == 0) dims.clear();
  return dims;
}

// The dims argument i of a reduction: an int, an int list, or None / [] for every dim.
std::vector<int64_t> dims_arg(const Node& n, size_t i, size_t rank) {
  if (i >= n.args.size()) return normalize_dims({}, rank);
  const auto& a = n.args[i];
  if (a.kind != graph::Arg::Kind::kConstant || !a.symbolic.empty()) throw Unsupported("reduction dims are not constants");
  if (a.constant.isNone()) return normalize_dims({}, rank);
  if (a.constant.isInt()) return normalize_dims({a.constant.toInt()}, rank);
  if (a.constant.isIntList()) return normalize_dims(a.constant.toIntVector(), rank);
  throw Unsupported("reduction dims of an unexpected kind");
}

bool bool_arg(const Node& n, size_t i, bool otherwise) {
  if (i >= n.args.size() || !n.args[i].constant.isBool()) return otherwise;
  return n.args[i].constant.toBool();
}

double double_arg(const Node& n, size_t i, double otherwise) {
  if (i >= n.args.size() || n.args[i].kind != graph::Arg::Kind::kConstant || n.args[i].constant.isNone()) return otherwise;
  const auto& v = n.args[i].constant;
  if (v.isDouble()) return v.toDouble();
  if (v.isInt()) return static_cast<double>(v.toInt());
  if (v.isScalar()) return v.toScalar().toDouble();
  throw Unsupported("a numeric argument is not a number");
}

// A reduction is computed once per kernel row, so it may only be read where the kernel's rows are its
// output elements, one to one; anywhere else it would be recomputed per row or per element, and its
// owner must be stored to a buffer by a kernel of its own first.
bool row_aligned(KernelBuilder& kb, const Index& out_index, const SymShape& out_sizes) {
  const uint64_t element_vars = kb.vars_of_kind(LoopVar::Kind::kInner) | kb.vars_of_kind(LoopVar::Kind::kReduction);
  std::vector<int> rows;
  for (int v : kb.kernel().outer_vars()) {
    int64_t extent;
    if (!(kb.is_constant(kb.kernel().vars[v].extent, &extent) && extent == 1)) rows.push_back(v);
  }
  size_t next = 0;
  bool aligned = true;
  for (size_t d = 0; d < out_index.size() && aligned; ++d) {
    if (kb.deps(out_index[d]) & element_vars) aligned = false;
    if (out_sizes[d].is_one()) continue;
    aligned = aligned && next < rows.size() && out_index[d] == kb.var(rows[next]) &&
              kb.kernel().vars[rows[next]].extent == kb.extent(out_sizes[d]);
    ++next;
  }
  return aligned && next == rows.size();
}

BuildFailure needs_buffer(ValueId owner) {
  return {BuildFailure::Kind::kNeedsBuffer, owner, "a reduction is read where the kernel's rows are not its output elements"};
}

struct Reduction {
  SymShape in_sizes;
  std::vector<int64_t> dims;  // reduced dims of the input, sorted
  bool keepdim = false;
};

// The input index for output element `out_index`: reduced dims take the loop's vars.
Index input_index(const Reduction& r, const Index& out_index, const std::vector<int>& loop_vars, KernelBuilder& kb) {
  Index in(r.in_sizes.size());
  size_t o = 0, l = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    const bool reduced = std::binary_search(r.dims.begin(), r.dims.end(), static_cast<int64_t>(d));
    if (reduced) {
      in[d] = kb.var(loop_vars[l++]);
      if (r.keepdim) ++o;
    } else {
      in[d] = out_index[o++];
    }
  }
  return in;
}

SymShape reduced_extents(const Reduction& r) {
  SymShape extents;
  for (int64_t d : r.dims) extents.push_back(r.in_sizes[d]);
  return extents;
}

// reduce(kind) of element(input index) over the reduced dims, for output element out_index. `position`
// (argmax/argmin) is the row-major position within the reduced dims.
int reduce_at(KernelBuilder& kb, const Reduction& r, const Index& out_index, ReduceKind kind, const Element& element) {
  std::vector<int> vars;
  const int loop = kb.reduction_loop(reduced_extents(r), &vars);
  const Index in = input_index(r, out_index, vars, kb);
  const int value = element(kb, in);
  int position = -1;
  if (kind == ReduceKind::kArgMax || kind == ReduceKind::kArgMin) {
    position = kb.index_constant(0);
    for (size_t d = 0; d < vars.size(); ++d) position = kb.add(kb.mul(position, kb.extent(r.in_sizes[r.dims[d]])), kb.var(vars[d]));
  }
  return kb.reduce(kind, value, loop, position);
}

int count_of(KernelBuilder& kb, const Reduction& r, ScalarType t) {
  int n = kb.index_constant(1);
  for (int64_t d : r.dims) n = kb.mul(n, kb.extent(r.in_sizes[d]));
  return kb.cast(n, t);
}

int mean_of(KernelBuilder& kb, const Reduction& r, const Index& index, const Loader& x, ScalarType t) {
  auto element = [&](KernelBuilder& kb, const Index& i) { return kb.cast(x(kb, i), t); };
  return kb.binary(ScalarOp::kDiv, reduce_at(kb, r, index, ReduceKind::kSum, element), count_of(kb, r, t));
}

// The mean that normalizations use: the rough mean m0 = sum / n, corrected by the mean deviation from
// it, m0 + sum(x - m0) / n (the corrected two-pass algorithm). A constant row gets its value exactly, as
// from ATen's Welford, since every deviation is 0; sum / n alone need not be (six copies of x can sum to
// a float that, divided by 6, is not x), and a normalization multiplies that error by rstd, 316 for a
// constant row. (A variance only squares it: var and std keep sum / n.) The correction is one more pass
// over the row, from cache: it made layer_norm over [4096, 1024] measurably slower on the 2-core machine
// (benchmarks/RESULTS.md, Fused CPU kernels, session 16). A shift by the row's first element would cost
// no pass, but its error grows with that element: 2.3-2.9e-6 off float64 on layer_norm over [2048, 1024],
// against eager's 1.5-1.6e-6.
int corrected_mean(KernelBuilder& kb, const Reduction& r, const Index& index, const Loader& x, ScalarType t) {
  auto element = [&](KernelBuilder& kb, const Index& i) { return kb.cast(x(kb, i), t); };
  const int n = count_of(kb, r, t);
  const int rough = mean_of(kb, r, index, x, t);
  const int deviations = reduce_at(kb, r, index, ReduceKind::kSum,
                                   [&](KernelBuilder& kb, const Index& i) { return kb.binary(ScalarOp::kSub, element(kb, i), rough); });
  return kb.binary(ScalarOp::kAdd, rough, kb.binary(ScalarOp::kDiv, deviations, n));
}

ValueId out_value(const Node& n, size_t k = 0) {
  size_t seen = 0;
  for (const auto& out : n.outputs)
    for (auto v : out.values)
      if (seen++ == k) return v;
  throw Unsupported(fmt::format("{} has no output {}", n.name(), k));
}

// The sum of x over r's dims in type t at output element `index`, built once per kernel for each input,
// dims and type: a training batch norm's mean and both of its variances sum the same rows, each pass one
// more read of the activation.
int row_sum(LoweringContext& c, KernelBuilder& kb, ValueId in, const Reduction& r, const Index& index, const Loader& x, ScalarType t) {
  return c.memoized(fmt::format("sum%{}%{}%{}%{}", in, fmt::join(r.dims, ","), r.keepdim, static_cast<int>(t)), index, [&] {
    return reduce_at(kb, r, index, ReduceKind::kSum, [&](KernelBuilder& kb, const Index& i) { return kb.cast(x(kb, i), t); });
  });
}

// A loader for a reduction value: checks alignment, memoizes per kernel, casts to the output type.
Loader reduction_loader(LoweringContext& c, ValueId owner, std::string tag, std::function<int(KernelBuilder&, const Index&)> compute) {
  const SymShape out_sizes = c.sizes(owner);
  const ScalarType result = compute_type_of(c.meta(owner).dtype);
  return [&c, owner, out_sizes, result, tag, compute](KernelBuilder& kb, const Index& index) {
    if (!row_aligned(kb, index, out_sizes)) return c.fail(kb, needs_buffer(owner), result);
    return c.memoized(fmt::format("{}%{}", tag, owner), index, [&] { return kb.cast(compute(kb, index), result); });
  };
}

// The type a reduction accumulates in: float for half/bfloat16, int64 for integer sums and products.
ScalarType accumulate_type(ScalarType out) { return compute_type_of(out); }

LowerFn simple_reduction(ReduceKind kind, size_t dims_at, size_t keepdim_at, bool mean) {
  return [=](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0), out = out_value(n);
    Reduction r{c.sizes(in), dims_arg(n, dims_at, c.sizes(in).size()), bool_arg(n, keepdim_at, false)};
    const ScalarType acc = kind == ReduceKind::kAny || kind == ReduceKind::kAll ? ScalarType::Bool : accumulate_type(c.meta(out).dtype);
    Loader x = c.input(in);
    return {reduction_loader(c, out, "red", [=, &c](KernelBuilder& kb, const Index& index) {
      const int total = kind == ReduceKind::kSum
                            ? row_sum(c, kb, in, r, index, x, acc)
                            : reduce_at(kb, r, index, kind, [&](KernelBuilder& kb, const Index& i) { return kb.cast(x(kb, i), acc); });
      return mean ? kb.binary(ScalarOp::kDiv, total, count_of(kb, r, acc)) : total;
    })};
  };
}

// max.dim / min.dim: (values, indices).
LowerFn extremum_with_index(bool max) {
  return [max](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0);
    Reduction r{c.sizes(in), dims_arg(n, 1, c.sizes(in).size()), bool_arg(n, 2, false)};
    const ScalarType t = compute_type_of(c.meta(in).dtype);
    Loader x = c.input(in);
    auto element = [x, t](KernelBuilder& kb, const Index& i) { return kb.cast(x(kb, i), t); };
    Loader values = reduction_loader(c, out_value(n, 0), "val", [=](KernelBuilder& kb, const Index& index) {
      return reduce_at(kb, r, index, max ? ReduceKind::kMax : ReduceKind::kMin, element);
    });
    Loader indices = reduction_loader(c, out_value(n, 1), "idx", [=](KernelBuilder& kb, const Index& index) {
      return reduce_at(kb, r, index, max ? ReduceKind::kArgMax : ReduceKind::kArgMin, element);
    });
    return {values, indices};
  };
}

LowerFn arg_extremum(bool max) {
  return [max](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0);
    const bool all = n.args.size() < 2 || n.args[1].constant.isNone();
    Reduction r{c.sizes(in), all ? normalize_dims({}, c.sizes(in).size()) : dims_arg(n, 1, c.sizes(in).size()), bool_arg(n, 2, false)};
    const ScalarType t = compute_type_of(c.meta(in).dtype);
    Loader x = c.input(in);
    return {reduction_loader(c, out_value(n), "arg", [=](KernelBuilder& kb, const Index& index) {
      return reduce_at(kb, r, index, max ? ReduceKind::kArgMax : ReduceKind::kArgMin,
                       [&](KernelBuilder& kb, const Index& i) { return kb.cast(x(kb, i), t); });
    })};
  };
}

// The sum of squared deviations from the mean m.
int squared_deviations(KernelBuilder& kb, const Reduction& r, const Index& index, const Loader& x, ScalarType t, int m) {
  return reduce_at(kb, r, index, ReduceKind::kSum, [&](KernelBuilder& kb, const Index& i) {
    const int d = kb.binary(ScalarOp::kSub, kb.cast(x(kb, i), t), m);
    return kb.binary(ScalarOp::kMul, d, d);
  });
}

// The squared deviations divided by max(n - correction, 0), as ATen divides them.
int corrected(KernelBuilder& kb, const Reduction& r, ScalarType t, int squares, double correction) {
  const int divisor =
      kb.binary(ScalarOp::kMax, kb.binary(ScalarOp::kSub, count_of(kb, r, t), kb.constant(correction, t)), kb.constant(0, t));
  return kb.binary(ScalarOp::kDiv, squares, divisor);
}

// Two-pass variance: the mean (given, or computed here), then the mean of squared deviations (as exact
// as ATen's Welford, without its per-element division).
int variance(KernelBuilder& kb, const Reduction& r, const Index& index, const Loader& x, ScalarType t, double correction, int* mean) {
  if (*mean < 0) *mean = mean_of(kb, r, index, x, t);
  return corrected(kb, r, t, squared_deviations(kb, r, index, x, t, *mean), correction);
}

double correction_arg(const Node& n) {
  const std::string overload = n.op.operator_name().overload_name;
  if (overload == "correction" || overload == "correction_names") return double_arg(n, 2, 1);
  if (overload == "dim") return bool_arg(n, 2, true) ? 1 : 0;  // unbiased
  if (overload.empty()) return bool_arg(n, 1, true) ? 1 : 0;
  throw Unsupported("var/std overload " + overload);
}

size_t keepdim_position(const Node& n) {
  const std::string overload = n.op.operator_name().overload_name;
  return overload.empty() ? 99 : 3;
}

bool single_element(const SymShape& sizes) {
  return std::all_of(sizes.begin(), sizes.end(), [](const SymExpr& e) { return e.is_constant() && e.offset == 1; });
}

LowerFn var_std(bool sqrt, bool with_mean) {
  return [=](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0);
    const bool no_dims = n.op.operator_name().overload_name.empty();
    Reduction r{c.sizes(in), no_dims ? normalize_dims({}, c.sizes(in).size()) : dims_arg(n, 1, c.sizes(in).size()),
                bool_arg(n, keepdim_position(n), false)};
    const double correction = correction_arg(n);
    // ATen's CPU kernel accumulates in double (WelfordOps<scalar_t, double>): float sums and squares of
    // large values overflow where its result is finite. Its CUDA kernel accumulates in float.
    const ScalarType t = c.meta(in).device.is_cpu() ? ScalarType::Double : compute_type_of(c.meta(out_value(n)).dtype);
    Loader x = c.input(in);
    // A variance of a whole float tensor (one output element) takes ATen's std_var_all_cpu instead: the
    // mean is self.mean() in the tensor's dtype (a float sum, which may overflow), the squares in double.
    const ScalarType input = c.meta(in).dtype;
    const bool whole =
        t == ScalarType::Double && single_element(c.sizes(out_value(n, 0))) && (input == ScalarType::Float || input == ScalarType::Double);
    // Keyed by the input, the dims and the type: the variances of one input (a training batch norm's biased
    // one for its output and unbiased one for its running variance) and a mean of it in the same type
    // (simple_reduction) sum its rows once and the squares once in a kernel that computes them all.
    const std::string rows = fmt::format("{}%{}%{}%{}", in, fmt::join(r.dims, ","), r.keepdim, static_cast<int>(t));
    std::vector<Loader> out = {reduction_loader(c, out_value(n, 0), "var", [=, &c](KernelBuilder& kb, const Index& index) {
      const int mean = whole ? kb.cast(mean_of(kb, r, index, x, input), t)
                             : kb.binary(ScalarOp::kDiv, row_sum(c, kb, in, r, index, x, t), count_of(kb, r, t));
      const int squares = whole ? squared_deviations(kb, r, index, x, t, mean)
                                : c.memoized("squares%" + rows, index, [&] { return squared_deviations(kb, r, index, x, t, mean); });
      const int v = corrected(kb, r, t, squares, correction);
      return sqrt ? kb.unary(ScalarOp::kSqrt, v) : v;
    })};
    if (with_mean)
      out.push_back(reduction_loader(c, out_value(n, 1), "mean", [=, &c](KernelBuilder& kb, const Index& index) {
        return kb.binary(ScalarOp::kDiv, row_sum(c, kb, in, r, index, x, t), count_of(kb, r, t));
      }));
    return out;
  };
}

LowerFn logsumexp() {
  return [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0);
    Reduction r{c.sizes(in), dims_arg(n, 1, c.sizes(in).size()), bool_arg(n, 2, false)};
    const ScalarType t = compute_type_of(c.meta(out_value(n)).dtype);
    Loader x = c.input(in);
    return {reduction_loader(c, out_value(n), "lse", [=](KernelBuilder& kb, const Index& index) {
      auto element = [&](KernelBuilder& kb, const Index& i) { return kb.cast(x(kb, i), t); };
      int m = reduce_at(kb, r, index, ReduceKind::kMax, element);
      // ATen: an infinite max is replaced by 0 so that inf - inf does not make NaN.
      const int infinite = kb.binary(ScalarOp::kEq, kb.unary(ScalarOp::kAbs, m), kb.constant(INFINITY, t));
      m = kb.where(infinite, kb.constant(0, t), m);
      const int sum = reduce_at(kb, r, index, ReduceKind::kSum, [&](KernelBuilder& kb, const Index& i) {
        return kb.unary(ScalarOp::kExp, kb.binary(ScalarOp::kSub, element(kb, i), m));
      });
      return kb.binary(ScalarOp::kAdd, kb.unary(ScalarOp::kLog, sum), m);
    })};
  };
}

// softmax / log_softmax over one dim: max, then sum of exp(x - max), then the element.
LowerFn softmax(bool log) {
  return [log](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0), out = out_value(n);
    const size_t rank = c.sizes(in).size();
    Reduction r{c.sizes(in), normalize_dims({n.args.at(1).constant.toInt()}, rank), true};
    const ScalarType t = compute_type_of(c.meta(out).dtype);
    // eager raises for an integer softmax, except over no elements (fuzzer seeds 635872, 675674)
    if (!c10::isFloatingType(t)) throw Unsupported("a softmax whose result is not a float tensor");
    Loader x = c.input(in);
    const SymShape out_sizes = c.sizes(out);
    SymShape row_sizes = out_sizes;  // the statistics' shape: the reduced dim kept as 1
    for (int64_t d : r.dims) row_sizes[d] = SymExpr::constant(1);
    c.row_dims[out] = r.dims;
    return {[&c, r, t, x, out, row_sizes, log](KernelBuilder& kb, const Index& index) {
      Index row = index;
      for (int64_t d : r.dims) row[d] = kb.index_constant(0);
      if (!row_aligned(kb, row, row_sizes)) return c.fail(kb, needs_buffer(out), t);
      auto element = [&](KernelBuilder& kb, const Index& i) { return kb.cast(x(kb, i), t); };
      const int m = c.memoized(fmt::format("smax%{}", out), row, [&] { return reduce_at(kb, r, row, ReduceKind::kMax, element); });
      const int sum = c.memoized(fmt::format("ssum%{}", out), row, [&] {
        return reduce_at(kb, r, row, ReduceKind::kSum, [&](KernelBuilder& kb, const Index& i) {
          return kb.unary(ScalarOp::kExp, kb.binary(ScalarOp::kSub, element(kb, i), m));
        });
      });
      const int shifted = kb.binary(ScalarOp::kSub, element(kb, index), m);
      if (log) return kb.binary(ScalarOp::kSub, shifted, kb.unary(ScalarOp::kLog, sum));
      // One division per row, a multiplication per element (as ATen's vectorized kernel scales).
      return kb.binary(ScalarOp::kMul, kb.unary(ScalarOp::kExp, shifted), kb.binary(ScalarOp::kDiv, kb.constant(1, t), sum));
    }};
  };
}

std::optional<ValueId> optional_tensor(const Node& n, size_t i) {
  if (i >= n.args.size() || n.args[i].kind != graph::Arg::Kind::kValue) return std::nullopt;
  return n.args[i].value;
}

// Layer norm over the last `normalized` dims: out = (x * rstd - rstd * mean) * weight + bias, as ATen's
// kernel computes it. native_layer_norm also returns mean and rstd (values of their own, stored when a
// kernel's rows do not match them); layer_norm and rms_norm compute them inside the output's kernel.
struct Normalization {
  ValueId in = graph::kNoValue, out = graph::kNoValue;
  std::optional<ValueId> weight, bias;
  Reduction r;
  double eps = 1e-5;
  bool rms = false;  // rms_norm: no mean subtracted
  ScalarType t = ScalarType::Float;
};

Normalization normalization(LoweringContext& c, const Node& n, size_t weight_at, size_t bias_at, size_t eps_at, double eps) {
  Normalization z;
  z.in = c.tensor_arg(n, 0);
  z.out = out_value(n, 0);
  const size_t rank = c.sizes(z.in).size();
  const size_t normalized = n.args.at(1).constant.toIntVector().size();
  if (normalized > rank) throw Unsupported("normalized_shape longer than the input");
  std::vector<int64_t> dims;
  for (size_t d = rank - normalized; d < rank; ++d) dims.push_back(static_cast<int64_t>(d));
  z.r = Reduction{c.sizes(z.in), dims, true};
  z.eps = double_arg(n, eps_at, eps);
  z.weight = optional_tensor(n, weight_at);
  z.bias = bias_at < 99 ? optional_tensor(n, bias_at) : std::nullopt;
  z.t = compute_type_of(c.meta(z.out).dtype);
  return z;
}

// rms_norm's mean of squares, as ATen's composite computes it (x.pow(2).mean(dims)).
int mean_of_squares(KernelBuilder& kb, const Reduction& r, const Index& row, const Loader& x, ScalarType t) {
  const int total = reduce_at(kb, r, row, ReduceKind::kSum, [&](KernelBuilder& kb, const Index& i) {
    const int v = kb.cast(x(kb, i), t);
    return kb.binary(ScalarOp::kMul, v, v);
  });
  return kb.binary(ScalarOp::kDiv, total, count_of(kb, r, t));
}

// The normalized element, given the row statistics.
int normalized_element(KernelBuilder& kb, const Normalization& z, LoweringContext& c, const Loader& x, const Index& index, int mean,
                       int rstd) {
  const ScalarType t = z.t;
  const int v = kb.cast(x(kb, index), t);
  int y = z.rms ? kb.binary(ScalarOp::kMul, v, rstd)
                : kb.binary(ScalarOp::kAdd, kb.binary(ScalarOp::kMul, v, rstd),
                            kb.unary(ScalarOp::kNeg, kb.binary(ScalarOp::kMul, rstd, mean)));
  const SymShape shape = c.sizes(z.out);
  if (z.weight) y = kb.binary(ScalarOp::kMul, y, kb.cast(c.broadcast(*z.weight, shape)(kb, index), t));
  if (z.bias) y = kb.binary(ScalarOp::kAdd, y, kb.cast(c.broadcast(*z.bias, shape)(kb, index), t));
  return y;
}

Index row_of(KernelBuilder& kb, const Reduction& r, Index index) {
  for (int64_t d : r.dims) index[d] = kb.index_constant(0);
  return index;
}

SymShape row_sizes(const Reduction& r) {
  SymShape s = r.in_sizes;
  for (int64_t d : r.dims) s[d] = SymExpr::constant(1);
  return s;
}

// layer_norm / rms_norm: the statistics are computed in the output's kernel, once per row.
LowerFn fused_normalization(bool rms) {
  return [rms](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    Normalization z = rms ? normalization(c, n, 2, 99, 3, 0) : normalization(c, n, 2, 3, 4, 1e-5);
    z.rms = rms;
    // eps=None: the epsilon of ATen's compute type (opmath_type), float32's for half and bfloat16.
    if (rms && (n.args.size() <= 3 || n.args[3].constant.isNone()))
      z.eps = c.meta(z.in).dtype == ScalarType::Double ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
    Loader x = c.input(z.in);
    c.row_dims[z.out] = z.r.dims;
    return {[&c, z, x](KernelBuilder& kb, const Index& index) {
      const Index row = row_of(kb, z.r, index);
      if (!row_aligned(kb, row, row_sizes(z.r))) return c.fail(kb, needs_buffer(z.out), z.t);
      const std::string key = fmt::format("%{}", z.out);
      const int mean = z.rms ? -1 : c.memoized("mean" + key, row, [&] { return corrected_mean(kb, z.r, row, x, z.t); });
      const int rstd = c.memoized("rstd" + key, row, [&] {
        int m = mean;
        const int var = z.rms ? mean_of_squares(kb, z.r, row, x, z.t) : variance(kb, z.r, row, x, z.t, 0, &m);
        return kb.unary(ScalarOp::kRsqrt, kb.binary(ScalarOp::kAdd, var, kb.constant(z.eps, z.t)));
      });
      return normalized_element(kb, z, c, x, index, mean, rstd);
    }};
  };
}

// native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd).
LowerFn layer_norm() {
  return [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const Normalization z = normalization(c, n, 2, 3, 4, 1e-5);
    const ValueId mean_v = out_value(n, 1), rstd_v = out_value(n, 2);
    Loader x = c.input(z.in);
    Loader mean = reduction_loader(c, mean_v, "lnm", [=](KernelBuilder& kb, const Index& i) { return corrected_mean(kb, z.r, i, x, z.t); });
    Loader rstd = reduction_loader(c, rstd_v, "lnr", [=, &c](KernelBuilder& kb, const Index& i) {
      int m = kb.cast(c.at(kb, mean_v, i), z.t);
      const int var = variance(kb, z.r, i, x, z.t, 0, &m);
      return kb.unary(ScalarOp::kRsqrt, kb.binary(ScalarOp::kAdd, var, kb.constant(z.eps, z.t)));
    });
    Loader y = [&c, z, x, mean_v, rstd_v](KernelBuilder& kb, const Index& index) {
      const Index row = row_of(kb, z.r, index);
      return normalized_element(kb, z, c, x, index, kb.cast(c.at(kb, mean_v, row), z.t), kb.cast(c.at(kb, rstd_v, row), z.t));
    };
    return {y, mean, rstd};
  };
}

// native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) -> (out, mean [N, G], rstd [N, G]).
// The statistics are read per channel, so they are stored by a kernel of their own.
LowerFn group_norm() {
  return [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    const ValueId in = c.tensor_arg(n, 0), mean_v = out_value(n, 1), rstd_v = out_value(n, 2);
    const SymShape sizes = c.sizes(in);
    const int64_t groups = n.args.at(6).constant.toInt();
    if (sizes.size() < 2 || !sizes[1].is_constant() || sizes[1].offset % groups != 0) throw Unsupported("group_norm channels");
    const int64_t per_group = sizes[1].offset / groups;
    const double eps = double_arg(n, 7, 1e-5);
    const ScalarType t = compute_type_of(c.meta(mean_v).dtype);
    Loader x = c.input(in);
    // The input seen as [N, groups, per_group, spatial...]: the statistics reduce dims 2 and up.
    SymShape grouped_sizes = {sizes[0], SymExpr::constant(groups), SymExpr::constant(per_group)};
    std::vector<int64_t> dims = {2};
    for (size_t d = 2; d < sizes.size(); ++d) {
      grouped_sizes.push_back(sizes[d]);
      dims.push_back(static_cast<int64_t>(d) + 1);
    }
    const Reduction r{grouped_sizes, dims, false};
    Loader grouped = [x, per_group](KernelBuilder& kb, const Index& i) {
      Index in = {i[0], kb.add(kb.mul(i[1], kb.index_constant(per_group)), i[2])};
      in.insert(in.end(), i.begin() + 3, i.end());
      return x(kb, in);
    };
    Loader mean =
        reduction_loader(c, mean_v, "gnm", [=](KernelBuilder& kb, const Index& ng) { return corrected_mean(kb, r, ng, grouped, t); });
    Loader rstd = reduction_loader(c, rstd_v, "gnr", [=, &c](KernelBuilder& kb, const Index& ng) {
      int m = kb.cast(c.at(kb, mean_v, ng), t);
      const int var = variance(kb, r, ng, grouped, t, 0, &m);
      return kb.unary(ScalarOp::kRsqrt, kb.binary(ScalarOp::kAdd, var, kb.constant(eps, t)));
    });
    const auto weight = optional_tensor(n, 1), bias = optional_tensor(n, 2);
    Loader y = [&c, x, t, per_group, mean_v, rstd_v, weight, bias](KernelBuilder& kb, const Index& index) {
      const Index ng = {index[0], kb.binary(ScalarOp::kDiv, index[1], kb.index_constant(per_group))};
      const int m = kb.cast(c.at(kb, mean_v, ng), t);
      int scale = kb.cast(c.at(kb, rstd_v, ng), t);
      if (weight) scale = kb.binary(ScalarOp::kMul, scale, kb.cast(c.at(kb, *weight, {index[1]}), t));
      int shift = kb.unary(ScalarOp::kNeg, kb.binary(ScalarOp::kMul, scale, m));
      if (bias) shift = kb.binary(ScalarOp::kAdd, shift, kb.cast(c.at(kb, *bias, {index[1]}), t));
      return kb.binary(ScalarOp::kAdd, kb.binary(ScalarOp::kMul, kb.cast(x(kb, index), t), scale), shift);
    };
    return {y, mean, rstd};
  };
}

// Batch norm in inference: out = x * alpha + beta per channel (dim 1), alpha = weight / sqrt(var + eps),
// beta = bias - mean * alpha, as ATen's CPU kernel computes it. Training mode stays an extern call.
LowerFn batch_norm_inference(size_t training_at, size_t eps_at) {
  return [=](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    if (training_at < n.args.size() && bool_arg(n, training_at, true)) throw Unsupported("batch_norm in training mode");
    const ValueId in = c.tensor_arg(n, 0);
    const auto weight = optional_tensor(n, 1), bias = optional_tensor(n, 2), mean = optional_tensor(n, 3), var = optional_tensor(n, 4);
    if (!mean || !var || c.sizes(in).size() < 2) throw Unsupported("batch_norm without running statistics");
    const double eps = double_arg(n, eps_at, 1e-5);
    const ScalarType t = compute_type_of(c.meta(out_value(n)).dtype);
    Loader x = c.input(in);
    Loader y = [&c, x, t, eps, weight, bias, mean, var](KernelBuilder& kb, const Index& index) {
      const Index channel = {index[1]};
      auto param = [&](ValueId v) { return kb.cast(c.at(kb, v, channel), t); };
      int alpha = kb.unary(ScalarOp::kRsqrt, kb.binary(ScalarOp::kAdd, param(*var), kb.constant(eps, t)));
      if (weight) alpha = kb.binary(ScalarOp::kMul, alpha, param(*weight));
      int beta = kb.unary(ScalarOp::kNeg, kb.binary(ScalarOp::kMul, param(*mean), alpha));
      if (bias) beta = kb.binary(ScalarOp::kAdd, beta, param(*bias));
      return kb.binary(ScalarOp::kAdd, kb.binary(ScalarOp::kMul, kb.cast(x(kb, index), t), alpha), beta);
    };
    std::vector<Loader> out = {y};
    Loader empty = [t](KernelBuilder& kb, const Index&) { return kb.constant(0, t); };  // save_mean/invstd: size 0
    size_t count = 0;
    for (const auto& o : n.outputs) count += o.values.size();
    while (out.size() < count) out.push_back(empty);
    return out;
  };
}

}  // namespace

void register_reductions(Registry& r) {
  r["aten::sum"] = simple_reduction(ReduceKind::kSum, 1, 2, false);
  r["aten::sum.default"] = simple_reduction(ReduceKind::kSum, 99, 99, false);
  r["aten::mean"] = simple_reduction(ReduceKind::kSum, 1, 2, true);
  r["aten::mean.default"] = simple_reduction(ReduceKind::kSum, 99, 99, true);
  r["aten::prod"] = simple_reduction(ReduceKind::kProd, 1, 2, false);
  r["aten::prod.default"] = simple_reduction(ReduceKind::kProd, 99, 99, false);
  r["aten::amax"] = simple_reduction(ReduceKind::kMax, 1, 2, false);
  r["aten::amin"] = simple_reduction(ReduceKind::kMin, 1, 2, false);
  r["aten::max.default"] = simple_reduction(ReduceKind::kMax, 99, 99, false);
  r["aten::min.default"] = simple_reduction(ReduceKind::kMin, 99, 99, false);
  r["aten::max.dim"] = extremum_with_index(true);
  r["aten::min.dim"] = extremum_with_index(false);
  r["aten::argmax"] = arg_extremum(true);
  r["aten::argmin"] = arg_extremum(false);
  r["aten::any"] = simple_reduction(ReduceKind::kAny, 1, 2, false);
  r["aten::any.default"] = simple_reduction(ReduceKind::kAny, 99, 99, false);
  r["aten::all"] = simple_reduction(ReduceKind::kAll, 1, 2, false);
  r["aten::all.default"] = simple_reduction(ReduceKind::kAll, 99, 99, false);
  r["aten::var"] = var_std(false, false);
  r["aten::std"] = var_std(true, false);
  r["aten::var_mean"] = var_std(false, true);
  r["aten::logsumexp"] = logsumexp();
  r["aten::_softmax"] = softmax(false);
  r["aten::_log_softmax"] = softmax(true);
  r["aten::native_layer_norm"] = layer_norm();
  r["aten::layer_norm"] = fused_normalization(false);
  r["aten::rms_norm"] = fused_normalization(true);
  r["aten::softmax"] = softmax(false);
  r["aten::log_softmax"] = softmax(true);
  r["aten::native_group_norm"] = group_norm();
  r["aten::native_batch_norm"] = batch_norm_inference(5, 7);
  r["aten::batch_norm"] = batch_norm_inference(5, 7);
  r["aten::_native_batch_norm_legit_no_training"] = batch_norm_inference(99, 6);
}

}  // namespace jitc::inductor
