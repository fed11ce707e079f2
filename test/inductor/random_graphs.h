// Random programs of pointwise, reduction and view ops for the differential tests (test_random.cpp on the
// CPU, the [random] case of test_cuda.cpp on a GPU): both run the same programs on the same input values,
// compiled through the inductor backend and eagerly on one device. A program is data (a list of steps
// over a pool of live tensors); one interpreter runs it with ATen ops, eagerly and under jitc::compile.
// A failure prints the program, seed included, so it can be replayed (JITC_RANDOM_SEED=<seed>);
// JITC_RANDOM_SEEDS=<n> runs more seeds than the default budget.
#pragma once
#include "support/parity.h"
#include "support/random_choices.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace jitc::testing::random_graphs {

using Shape = std::vector<int64_t>;

constexpr int64_t kMaxRank = 4;
constexpr int64_t kMaxNumel = 4096;
// Every value of a program stays within +-kMaxMagnitude: float32 holds it to ~1e-5 absolute there, so
// the ops that turn an input's absolute error into an output error (exp, sin, softmax, logsumexp) stay
// well-conditioned at the tolerance. Past it one ulp of difference (libm vs ATen's exp, a reassociated
// sum) grows to more than the tolerance, in eager as much as in the kernel, and the check tests nothing.
constexpr double kMaxMagnitude = 100;

enum class Op {
  // unary pointwise
  kNeg, kAbs, kExpClamped, kTanh, kSigmoid, kRelu, kSin, kSqrtAbsPlus1, kGelu, kSilu, kSquare,
  // binary pointwise (broadcasting)
  kAdd, kSub, kMul, kMaximum, kMinimum, kWhereGreater, kDivAbsPlus1,
  // with a scalar
  kMulScalar, kAddScalar,
  // reductions
  kSum, kMean, kAmax, kAmin, kVar, kSoftmax, kLogSoftmax, kLogsumexp, kLayerNorm,
  // views
  kTranspose, kUnsqueeze, kReshape, kSlice, kExpand, kPermute,
  // in-place writes into a value made by the program (InPlace::kIntermediates): x.mul_(s), or through a
  // slice of x; the result is x itself
  kMulScalarInPlace, kSliceMulScalarInPlace,
};
constexpr Op kFirstUnary = Op::kNeg, kLastUnary = Op::kSquare;
constexpr Op kFirstBinary = Op::kAdd, kLastBinary = Op::kDivAbsPlus1;
constexpr Op kFirstReduction = Op::kSum, kLastReduction = Op::kLayerNorm;

// Which normalizations a program may hold: softmax over any dim and layer_norm over several trailing
// dims are one CPU kernel each, but extern calls on CUDA (whose code generator keeps a normalization's
// row in the last dim), where the test requires every op lowered.
enum class Normalizations { kLastDim, kAnyDims };

// Whether a program may write in place into the values it made (never into its inputs, or views of them).
enum class InPlace { kNo, kIntermediates };

inline const char* name(Op op) {
  static const char* const names[] = {
      "neg", "abs", "exp_clamped", "tanh", "sigmoid", "relu", "sin", "sqrt_abs_plus_1", "gelu", "silu", "square",
      "add", "sub", "mul", "maximum", "minimum", "where_greater", "div_abs_plus_1",
      "mul_scalar", "add_scalar",
      "sum", "mean", "amax", "amin", "var", "softmax", "log_softmax", "logsumexp", "layer_norm",
      "transpose", "unsqueeze", "reshape", "slice", "expand", "permute", "mul_", "slice_mul_"};
  return names[static_cast<int>(op)];
}

// One step: result = op(pool[a], pool[b]) with op's parameters; the result joins the pool.
struct Step {
  Op op = Op::kNeg;
  int a = 0, b = 0;
  int64_t dim = 0, dim2 = 0;      // reductions (layer_norm: how many trailing dims), transpose, unsqueeze, slice
  bool keepdim = false;
  int64_t correction = 0;         // var
  double scalar = 0;              // mul_scalar, add_scalar
  int64_t start = 0, end = 0, step = 1;  // slice
  Shape ints;                     // reshape's shape, permute's order, expand's size
  Shape result;                   // the result's sizes (for the printed program)
};

struct Program {
  uint32_t seed = 0;
  std::vector<Shape> inputs;
  std::vector<Step> steps;
  std::vector<int> outputs;  // pool indices
};

inline at::Tensor run_step(const Step& s, const std::vector<at::Tensor>& pool) {
  const at::Tensor& x = pool[s.a];
  const at::Tensor& y = pool[s.b];
  switch (s.op) {
    case Op::kNeg: return x.neg();
    case Op::kAbs: return x.abs();
    case Op::kExpClamped: return x.clamp(-10, 10).exp();
    case Op::kTanh: return x.tanh();
    case Op::kSigmoid: return x.sigmoid();
    case Op::kRelu: return x.relu();
    case Op::kSin: return x.sin();
    case Op::kSqrtAbsPlus1: return (x.abs() + 1).sqrt();
    case Op::kGelu: return at::gelu(x);
    case Op::kSilu: return at::silu(x);
    case Op::kSquare: return x * x;
    case Op::kAdd: return x + y;
    case Op::kSub: return x - y;
    case Op::kMul: return x * y;
    case Op::kMaximum: return at::maximum(x, y);
    case Op::kMinimum: return at::minimum(x, y);
    case Op::kWhereGreater: return at::where(x > y, x, y);
    case Op::kDivAbsPlus1: return x / (y.abs() + 1);
    case Op::kMulScalar: return x * s.scalar;
    case Op::kAddScalar: return x + s.scalar;
    case Op::kSum: return x.sum(s.dim, s.keepdim);
    case Op::kMean: return x.mean(s.dim, s.keepdim);
    case Op::kAmax: return x.amax(s.dim, s.keepdim);
    case Op::kAmin: return x.amin(s.dim, s.keepdim);
    case Op::kVar: return at::var(x, at::IntArrayRef{s.dim}, at::Scalar(s.correction), s.keepdim);
    case Op::kSoftmax: return at::softmax(x, s.dim);
    case Op::kLogSoftmax: return at::log_softmax(x, s.dim);
    case Op::kLogsumexp: return at::logsumexp(x, s.dim, s.keepdim);
    case Op::kLayerNorm: return at::layer_norm(x, x.sizes().slice(x.dim() - s.dim));
    case Op::kTranspose: return x.transpose(s.dim, s.dim2);
    case Op::kUnsqueeze: return x.unsqueeze(s.dim);
    case Op::kReshape: return x.reshape(s.ints);
    case Op::kSlice: return x.slice(s.dim, s.start, s.end, s.step);
    case Op::kExpand: return x.expand(s.ints);
    case Op::kPermute: return x.permute(s.ints);
    case Op::kMulScalarInPlace: return x.mul_(s.scalar);
    case Op::kSliceMulScalarInPlace: x.slice(s.dim, s.start, s.end, s.step).mul_(s.scalar); return x;
  }
  return {};
}

// The inputs of a program, drawn on the CPU from its seed and then moved: every device sees the same values
// (the ones the generator checked the magnitudes of).
inline std::vector<at::Tensor> input_data(const Program& p, at::Device device = at::kCPU) {
  at::manual_seed(p.seed);
  std::vector<at::Tensor> inputs;
  for (const auto& shape : p.inputs) inputs.push_back((at::randn(shape) * 2).to(device));
  return inputs;
}

inline std::vector<at::Tensor> interpret(const Program& p, const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> pool(inputs.begin(), inputs.end());
  for (const auto& s : p.steps) pool.push_back(run_step(s, pool));
  std::vector<at::Tensor> out;
  for (int i : p.outputs) out.push_back(pool[i]);
  return out;
}

inline std::string shape_text(at::IntArrayRef sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += fmt::format("{}{}", i ? ", " : "", sizes[i]);
  return text + "]";
}

inline std::string to_string(const Program& p) {
  std::string text = fmt::format("program of seed {} (replay: JITC_RANDOM_SEED={})\n", p.seed, p.seed);
  for (size_t i = 0; i < p.inputs.size(); ++i) text += fmt::format("  t{} = input float32 {}\n", i, shape_text(p.inputs[i]));
  int t = static_cast<int>(p.inputs.size());
  for (const auto& s : p.steps) {
    std::string args = fmt::format("t{}", s.a);
    const int o = static_cast<int>(s.op);
    if (o >= static_cast<int>(kFirstBinary) && o <= static_cast<int>(kLastBinary)) args += fmt::format(", t{}", s.b);
    switch (s.op) {
      case Op::kMulScalar:
      case Op::kMulScalarInPlace:
      case Op::kAddScalar: args += fmt::format(", {}", s.scalar); break;
      case Op::kSliceMulScalarInPlace: args += fmt::format(", dim={}, {}:{}:{}, {}", s.dim, s.start, s.end, s.step, s.scalar); break;
      case Op::kVar: args += fmt::format(", dim={}, correction={}, keepdim={}", s.dim, s.correction, s.keepdim); break;
      case Op::kSoftmax:
      case Op::kLogSoftmax: args += fmt::format(", dim={}", s.dim); break;
      case Op::kLayerNorm: args += fmt::format(", over the last {} dims", s.dim); break;
      case Op::kTranspose: args += fmt::format(", {}, {}", s.dim, s.dim2); break;
      case Op::kUnsqueeze: args += fmt::format(", {}", s.dim); break;
      case Op::kSlice: args += fmt::format(", dim={}, {}:{}:{}", s.dim, s.start, s.end, s.step); break;
      case Op::kReshape:
      case Op::kExpand:
      case Op::kPermute: args += ", " + shape_text(s.ints); break;
      default:
        if (o >= static_cast<int>(kFirstReduction) && o <= static_cast<int>(kLastReduction))
          args += fmt::format(", dim={}, keepdim={}", s.dim, s.keepdim);
    }
    text += fmt::format("  t{} = {}({})  # {}\n", t++, name(s.op), args, shape_text(s.result));
  }
  text += "  return";
  for (int i : p.outputs) text += fmt::format(" t{}", i);
  return text;
}

// ---- the generator -----------------------------------------------------------------------------------
class Generator : RandomChoices {
 public:
  Generator(uint32_t seed, Normalizations normalizations, InPlace in_place)
      : RandomChoices(seed), normalizations_(normalizations), in_place_(in_place) {
    program_.seed = seed;
  }

  Program generate() {
    make_inputs();
    const int target = uniform(1, 8);
    for (int attempt = 0; attempt < 20 * target && static_cast<int>(program_.steps.size()) < target; ++attempt) try_step();
    while (program_.steps.empty()) try_step();
    const int n_inputs = static_cast<int>(program_.inputs.size());
    const int last = static_cast<int>(pool_.size()) - 1;
    program_.outputs.push_back(last);
    if (last > n_inputs && chance(0.4)) program_.outputs.push_back(uniform(n_inputs, last - 1));
    return program_;
  }

 private:

  Shape random_shape() {
    Shape s(uniform(1, 3));
    for (auto& d : s) d = uniform(1, 9);
    if (chance(0.2)) s[uniform(0, static_cast<int>(s.size()) - 1)] = 1;  // e.g. [1, n] or [n, 1]
    return s;
  }

  // The first input is random; later ones often share or broadcast against it.
  void make_inputs() {
    const int n = uniform(1, 3);
    const Shape base = random_shape();
    for (int i = 0; i < n; ++i) {
      Shape s = base;
      const double r = std::uniform_real_distribution<double>(0, 1)(rng_);
      if (i > 0 && r < 0.3) {
        for (auto& d : s)
          if (chance(0.4)) d = 1;
        if (s.size() > 1 && chance(0.3)) s.erase(s.begin());  // fewer leading dims
      } else if (i > 0 && r < 0.6) {
        s = random_shape();
      }
      program_.inputs.push_back(s);
    }
    pool_ = input_data(program_);
  }

  // An operand: most often the newest tensor, so that chains grow long.
  int operand() { return chance(0.6) ? static_cast<int>(pool_.size()) - 1 : uniform(0, static_cast<int>(pool_.size()) - 1); }

  static bool broadcastable(at::IntArrayRef x, at::IntArrayRef y) {
    for (size_t i = 1; i <= std::min(x.size(), y.size()); ++i) {
      const int64_t a = x[x.size() - i], b = y[y.size() - i];
      if (a != b && a != 1 && b != 1) return false;
    }
    return true;
  }

  int64_t random_dim(int64_t rank) {
    const int64_t d = uniform(0, static_cast<int>(rank) - 1);
    return chance(0.3) ? d - rank : d;  // negative dims too
  }

  static bool overlapping(const at::Tensor& t) {
    for (int64_t d = 0; d < t.dim(); ++d)
      if (t.size(d) > 1 && t.stride(d) == 0) return true;
    return false;
  }

  // A write into a value the program made (not an input nor a view of one): its factor's magnitude is at
  // most 1, so no value the program already holds grows past kMaxMagnitude. Not into memory an expanded
  // value shares: eager writes a non-overlapping slice of one, jitc replays such a graph eagerly.
  bool build_in_place(Step& s) {
    std::vector<int> made;
    const int n_inputs = static_cast<int>(program_.inputs.size());
    for (int i = n_inputs; i < static_cast<int>(pool_.size()); ++i) {
      bool excluded = false;
      for (int k = 0; k < static_cast<int>(pool_.size()); ++k)
        excluded = excluded || (pool_[i].is_alias_of(pool_[k]) && (k < n_inputs || overlapping(pool_[k])));
      if (!excluded) made.push_back(i);
    }
    if (made.empty()) return false;
    s.a = chance(0.6) ? made.back() : pick(made);
    s.scalar = pick(std::vector<double>{-1.0, -0.5, 0.5, 0.75});
    const at::Tensor& x = pool_[s.a];
    if (x.dim() == 0 || chance(0.4)) {
      s.op = Op::kMulScalarInPlace;
      return true;
    }
    s.op = Op::kSliceMulScalarInPlace;
    s.dim = random_dim(x.dim());
    const int size = static_cast<int>(x.size(s.dim));
    s.start = uniform(0, size - 1);
    s.end = uniform(static_cast<int>(s.start) + 1, size);
    s.step = uniform(1, 2);
    return true;
  }

  // Fills a step of a random kind for the tensors in the pool; false when its shapes do not fit.
  bool build(Step& s) {
    if (in_place_ == InPlace::kIntermediates && chance(0.2)) return build_in_place(s);
    const int kind = uniform(0, 99);
    s.a = operand();
    const at::Tensor& x = pool_[s.a];
    const int64_t rank = x.dim();
    if (kind < 25) {
      s.op = static_cast<Op>(uniform(static_cast<int>(kFirstUnary), static_cast<int>(kLastUnary)));
      return true;
    }
    if (kind < 50) {
      s.op = static_cast<Op>(uniform(static_cast<int>(kFirstBinary), static_cast<int>(kLastBinary)));
      std::vector<int> partners;
      for (int i = 0; i < static_cast<int>(pool_.size()); ++i)
        if (broadcastable(x.sizes(), pool_[i].sizes())) partners.push_back(i);
      s.b = pick(partners);  // never empty: x broadcasts against itself
      if (chance(0.5)) std::swap(s.a, s.b);
      return true;
    }
    if (kind < 60) {
      s.op = chance(0.5) ? Op::kMulScalar : Op::kAddScalar;
      s.scalar = pick(std::vector<double>{-2.0, -0.5, 0.25, 1.5, 3.0});
      return true;
    }
    if (kind < 80) {
      if (rank == 0) return false;
      s.op = static_cast<Op>(uniform(static_cast<int>(kFirstReduction), static_cast<int>(kLastReduction)));
      s.dim = random_dim(rank);
      s.keepdim = chance(0.5);
      const bool any_dims = normalizations_ == Normalizations::kAnyDims;
      if ((s.op == Op::kSoftmax || s.op == Op::kLogSoftmax) && !any_dims) s.dim = -1;
      if (s.op == Op::kLayerNorm) s.dim = any_dims ? uniform(1, static_cast<int>(rank)) : 1;
      if (s.op == Op::kVar) {
        if (x.size(s.dim) <= 1) return false;
        s.correction = uniform(0, 1);
      }
      return true;
    }
    switch (uniform(0, 5)) {
      case 0:
        if (rank < 2) return false;
        s.op = Op::kTranspose;
        s.dim = uniform(0, static_cast<int>(rank) - 1);
        do {
          s.dim2 = uniform(0, static_cast<int>(rank) - 1);
        } while (s.dim2 == s.dim);
        return true;
      case 1:
        if (rank >= kMaxRank) return false;
        s.op = Op::kUnsqueeze;
        s.dim = uniform(0, static_cast<int>(rank));
        return true;
      case 2: return build_reshape(s, x);
      case 3: {
        if (rank == 0) return false;
        s.op = Op::kSlice;
        s.dim = random_dim(rank);
        const int size = static_cast<int>(x.size(s.dim));
        s.start = uniform(0, size - 1);
        s.end = uniform(static_cast<int>(s.start) + 1, size);
        s.step = uniform(1, 3);
        return true;
      }
      case 4: {
        std::vector<int64_t> ones;
        for (int64_t d = 0; d < rank; ++d)
          if (x.size(d) == 1) ones.push_back(d);
        if (ones.empty()) return false;
        s.op = Op::kExpand;
        s.ints = x.sizes().vec();
        s.ints[pick(ones)] = uniform(2, 9);
        return true;
      }
      default:
        if (rank < 2) return false;
        s.op = Op::kPermute;
        s.ints.resize(rank);
        std::iota(s.ints.begin(), s.ints.end(), 0);
        std::shuffle(s.ints.begin(), s.ints.end(), rng_);
        return true;
    }
  }

  // Flatten, split into two factors, or merge two adjacent dims.
  bool build_reshape(Step& s, const at::Tensor& x) {
    s.op = Op::kReshape;
    const int64_t n = x.numel();
    switch (uniform(0, 2)) {
      case 0: s.ints = {-1}; return true;
      case 1: {
        std::vector<int64_t> divisors;
        for (int64_t d = 1; d <= n; ++d)
          if (n % d == 0) divisors.push_back(d);
        const int64_t p = pick(divisors);
        s.ints = {p, chance(0.5) ? -1 : n / p};
        return true;
      }
      default: {
        if (x.dim() < 2) return false;
        const int64_t d = uniform(0, static_cast<int>(x.dim()) - 2);
        s.ints = x.sizes().vec();
        s.ints[d] *= s.ints[d + 1];
        s.ints.erase(s.ints.begin() + d + 1);
        return true;
      }
    }
  }

  // Adds one step when its shapes fit, eager accepts it and its values stay within kMaxMagnitude.
  bool try_step() {
    Step s;
    if (!build(s)) return false;
    at::Tensor t;
    try {
      t = run_step(s, pool_);
    } catch (const std::exception&) {
      return false;
    }
    if (t.dim() > kMaxRank || t.numel() > kMaxNumel || !(t.abs().max().item<double>() <= kMaxMagnitude)) return false;
    s.result = t.sizes().vec();
    program_.steps.push_back(std::move(s));
    pool_.push_back(t);
    return true;
  }

  Normalizations normalizations_;
  InPlace in_place_;
  Program program_;
  std::vector<at::Tensor> pool_;  // the program's values on its inputs
};

inline Program generate(uint32_t seed, Normalizations normalizations, InPlace in_place = InPlace::kNo) {
  return Generator(seed, normalizations, in_place).generate();
}

// The seeds to run: 0..default_seeds-1, or JITC_RANDOM_SEEDS=<n> for 0..n-1, or JITC_RANDOM_SEED=<s> for
// one. Each test picks its default budget (what fits its CI or GPU host run).
inline std::pair<uint32_t, uint32_t> seed_range(uint32_t default_seeds) {
  if (const char* one = std::getenv("JITC_RANDOM_SEED")) {
    const auto s = static_cast<uint32_t>(std::strtoul(one, nullptr, 10));
    return {s, s + 1};
  }
  const char* n = std::getenv("JITC_RANDOM_SEEDS");
  return {0, n ? static_cast<uint32_t>(std::strtoul(n, nullptr, 10)) : default_seeds};
}

// Largest |result - float64 reference| of each side: tells a kernel bug from float32 rounding.
inline std::string float64_errors(const Program& p, const std::vector<at::Tensor>& inputs, size_t output,
                                  const at::Tensor& got, const at::Tensor& want) {
  std::vector<at::Tensor> doubles;
  for (const auto& x : inputs) doubles.push_back(x.to(at::kDouble));
  const at::Tensor ref = interpret(p, doubles)[output];
  auto err = [&](const at::Tensor& t) { return (t.to(at::kDouble) - ref).abs().nan_to_num(1e300).max().item<double>(); };
  return fmt::format("; max error vs float64: compiled {}, eager {}", err(got), err(want));
}

// Wider than tolerance_for(kFloat) (1e-5, one op's few ulps): a generated chain holds several
// reductions whose summation order differs from ATen's (the kernel's reduction is reassociated:
// vectorized on the CPU, split over threads on the GPU; ATen sums in its own order), and chains after them
// (exp, division, var) amplify that. One tolerance for both devices.
constexpr Tolerance kTolerance{1e-4, 1e-4};

// Runs a program on inputs on `device` eagerly and through jitc (trace, then the compiled program) and
// checks every output against eager's; on failure the context names the program and its seed.
inline void check_compiled_vs_eager(const Program& program, at::Device device) {
  const std::vector<at::Tensor> inputs = input_data(program, device);
  INFO(to_string(program));
  const std::vector<at::Tensor> want = interpret(program, inputs);
  auto compiled = jitc::compile([program](const std::vector<at::Tensor>& xs) { return interpret(program, xs); });
  LogCapture logs("perf_hints,fusion");
  compiled(inputs);
  const std::vector<at::Tensor> got = compiled(inputs);
  CHECK(compiled.stats().programs_compiled == 1);
  CHECK(unlowered_ops(logs) == std::vector<std::string>{});  // every generated op has a lowering
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    std::string diff = difference(got[i], want[i], kTolerance);
    if (!diff.empty() && got[i].sizes() == want[i].sizes()) diff += float64_errors(program, inputs, i, got[i], want[i]);
    INFO("output " << i);
    CHECK(diff == "");
  }
}

}  // namespace jitc::testing::random_graphs
