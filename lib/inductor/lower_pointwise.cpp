// Lowerings of pointwise ops: unary, binary and ternary math, comparisons, logical and bitwise ops,
// where/masked_fill/clamp, casts and the activation functions, written as decompositions into the
// kernel IR's scalar ops. Formulas follow ATen's CPU kernels (aten/src/ATen/native/cpu/*), so results
// agree with eager to rounding.
#include "inductor/lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace jitc::inductor {

namespace {

using c10::ScalarType;
using graph::Node;
using graph::ValueId;
using Values = std::vector<int>;
using Body = std::function<int(KernelBuilder&, const Values&, ScalarType)>;

ValueId output(const Node& n) { return n.outputs.at(0).values.at(0); }

bool is_floating(ScalarType t) { return c10::isFloatingType(t); }

// How an operand of another dtype enters an op whose common dtype is half or bfloat16. TensorIterator
// converts it to the common dtype, so eager's CPU kernels see it rounded (add, sub, remainder, pow,
// comparisons...: `x_half == 0.1` compares with half(0.1); an int32 tensor holding 2^31 - 1 becomes inf).
// kOriginal: mul, div and lerp read their last operand, when it is a number or holds one element, as the
// original value in float instead (`original_scalar_value<opmath_t>` in BinaryOpsKernel.cpp).
enum class Numbers { kRounded, kOriginal };

bool single_element(LoweringContext& c, const Operand& o) {
  if (!o.is_tensor()) return true;
  const auto& sizes = c.sizes(o.value);
  return std::all_of(sizes.begin(), sizes.end(), [](const graph::SymExpr& d) { return d.is_constant() && d.offset == 1; });
}

// The loader of `n`'s output: each operand read at the output's index, cast to `compute`, combined by
// `body`, and cast to the output's compute type.
std::vector<Loader> pointwise(LoweringContext& c, const Node& n, const std::vector<Operand>& operands, ScalarType compute, Body body,
                              Numbers numbers = Numbers::kRounded) {
  const auto shape = c.sizes(output(n));
  const ScalarType result = compute_type_of(c.meta(output(n)).dtype);
  const ScalarType common = compute;
  compute = compute_type_of(compute);
  std::vector<Loader> loaders;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Operand& o = operands[i];
    Loader l = c.operand(o, shape, compute);
    const bool original = numbers == Numbers::kOriginal && i + 1 == operands.size() && single_element(c, o);
    if ((!o.symbolic || o.runtime_double()) && !original && compute != common)
      l = [l, common](KernelBuilder& kb, const Index& index) { return kb.round_to(l(kb, index), common); };
    loaders.push_back(std::move(l));
  }
  return {[loaders, body, compute, result](KernelBuilder& kb, const Index& index) {
    Values x;
    for (const auto& l : loaders) x.push_back(l(kb, index));
    return kb.cast(body(kb, x, compute), result);
  }};
}

ScalarType out_dtype(LoweringContext& c, const Node& n) { return c.meta(output(n)).dtype; }
bool on_cpu(LoweringContext& c, const Node& n) { return c.meta(output(n)).device.is_cpu(); }

std::optional<double> optional_number(LoweringContext& c, const Node& n, size_t i) {
  if (i >= n.args.size() || (n.args[i].kind == graph::Arg::Kind::kConstant && n.args[i].constant.isNone())) return std::nullopt;
  const Operand o = c.operand_of(n, i);
  if (o.is_tensor() || o.symbolic) throw Unsupported(fmt::format("argument {} of {} is not a constant", i, n.name()));
  return o.scalar.toDouble();
}

double number(LoweringContext& c, const Node& n, size_t i, double otherwise) { return optional_number(c, n, i).value_or(otherwise); }

std::string string_arg(const Node& n, size_t i, const char* otherwise) {
  if (i >= n.args.size() || !n.args[i].constant.isString()) return otherwise;
  return n.args[i].constant.toStringRef();
}

int k(KernelBuilder& kb, double v, ScalarType t) { return kb.constant(v, t); }

// ---- unary ----------------------------------------------------------------------------------------

// Unary math computed in the output's type (integer inputs of exp, sin... give float outputs).
LowerFn unary(Body body) {
  return [body](LoweringContext& c, const Node& n) { return pointwise(c, n, {c.operand_of(n, 0)}, out_dtype(c, n), body); };
}

LowerFn unary_op(ScalarOp op) {
  return unary([op](KernelBuilder& kb, const Values& x, ScalarType) { return kb.unary(op, x[0]); });
}

int sigmoid(KernelBuilder& kb, int x, ScalarType t) {
  return kb.binary(ScalarOp::kDiv, k(kb, 1, t),
                   kb.binary(ScalarOp::kAdd, k(kb, 1, t), kb.unary(ScalarOp::kExp, kb.unary(ScalarOp::kNeg, x))));
}

int relu(KernelBuilder& kb, int x, ScalarType t) {  // NaN stays NaN, as in ATen
  return kb.where(kb.binary(ScalarOp::kLt, x, k(kb, 0, t)), k(kb, 0, t), x);
}

// x where it equals a bound (ATen's std::max(a, min) / _mm_max_ps(min, a) keep a): clamp(-0.0, 0.0, 1)
// and relu6(-0.0) are -0.0 as in eager. The max/min printers keep their second operand on ties.
int clamp(KernelBuilder& kb, int x, std::optional<int> lo, std::optional<int> hi) {
  if (lo) x = kb.binary(ScalarOp::kMax, *lo, x);
  if (hi) x = kb.binary(ScalarOp::kMin, *hi, x);
  return x;
}

int softplus(KernelBuilder& kb, int x, ScalarType t, double beta, double threshold) {
  const int scaled = kb.binary(ScalarOp::kMul, x, k(kb, beta, t));
  const int soft = kb.binary(ScalarOp::kDiv, kb.unary(ScalarOp::kLog1p, kb.unary(ScalarOp::kExp, scaled)), k(kb, beta, t));
  return kb.where(kb.binary(ScalarOp::kGt, scaled, k(kb, threshold, t)), x, soft);
}

// Math functions and rounding: one scalar op each.
void register_math(Registry& r) {
  const std::pair<const char*, ScalarOp> direct[] = {
      {"aten::neg", ScalarOp::kNeg},     {"aten::abs", ScalarOp::kAbs},     {"aten::exp", ScalarOp::kExp},
      {"aten::exp2", ScalarOp::kExp2},   {"aten::expm1", ScalarOp::kExpm1}, {"aten::log", ScalarOp::kLog},
      {"aten::log2", ScalarOp::kLog2},   {"aten::log10", ScalarOp::kLog10}, {"aten::log1p", ScalarOp::kLog1p},
      {"aten::sqrt", ScalarOp::kSqrt},   {"aten::rsqrt", ScalarOp::kRsqrt}, {"aten::sin", ScalarOp::kSin},
      {"aten::cos", ScalarOp::kCos},     {"aten::tan", ScalarOp::kTan},     {"aten::asin", ScalarOp::kAsin},
      {"aten::acos", ScalarOp::kAcos},   {"aten::atan", ScalarOp::kAtan},   {"aten::sinh", ScalarOp::kSinh},
      {"aten::cosh", ScalarOp::kCosh},   {"aten::tanh", ScalarOp::kTanh},   {"aten::asinh", ScalarOp::kAsinh},
      {"aten::acosh", ScalarOp::kAcosh}, {"aten::atanh", ScalarOp::kAtanh}, {"aten::erf", ScalarOp::kErf},
      {"aten::erfc", ScalarOp::kErfc},   {"aten::floor", ScalarOp::kFloor}, {"aten::ceil", ScalarOp::kCeil},
      {"aten::round", ScalarOp::kRound}, {"aten::trunc", ScalarOp::kTrunc}, {"aten::sign", ScalarOp::kSign},
      {"aten::sgn", ScalarOp::kSign},    {"aten::fix", ScalarOp::kTrunc},
  };
  for (const auto& [name, op] : direct) r[name] = unary_op(op);
  for (const char* name : {"aten::sign", "aten::sgn"})
    r[name] = unary(
        [](KernelBuilder& kb, const Values& x, ScalarType t) { return t == ScalarType::Bool ? x[0] : kb.unary(ScalarOp::kSign, x[0]); });
  // Integer floor/ceil/round/trunc are the identity in ATen.
  for (const char* name : {"aten::floor", "aten::ceil", "aten::round", "aten::trunc", "aten::fix"})
    r[name] = unary([op = name](KernelBuilder& kb, const Values& x, ScalarType t) {
      if (!is_floating(t)) return x[0];
      const std::string s = op;
      const ScalarOp o = s == "aten::floor"   ? ScalarOp::kFloor
                         : s == "aten::ceil"  ? ScalarOp::kCeil
                         : s == "aten::round" ? ScalarOp::kRound
                                              : ScalarOp::kTrunc;
      return kb.unary(o, x[0]);
    });
  r["aten::round.decimals"] = [](LoweringContext& c, const Node& n) -> std::vector<Loader> {
    if (number(c, n, 1, 0) != 0) throw Unsupported("round with decimals != 0");
    return unary_op(ScalarOp::kRound)(c, n);
  };
  r["aten::reciprocal"] =
      unary([](KernelBuilder& kb, const Values& x, ScalarType t) { return kb.binary(ScalarOp::kDiv, k(kb, 1, t), x[0]); });
  r["aten::square"] = unary([](KernelBuilder& kb, const Values& x, ScalarType) { return kb.binary(ScalarOp::kMul, x[0], x[0]); });
  r["aten::frac"] = unary(
      [](KernelBuilder& kb, const Values& x, ScalarType) { return kb.binary(ScalarOp::kSub, x[0], kb.unary(ScalarOp::kTrunc, x[0])); });
}

void register_activations(Registry& r) {
  r["aten::sigmoid"] = unary([](KernelBuilder& kb, const Values& x, ScalarType t) { return sigmoid(kb, x[0], t); });
  r["aten::relu"] = unary([](KernelBuilder& kb, const Values& x, ScalarType t) { return relu(kb, x[0], t); });
  r["aten::silu"] = unary([](KernelBuilder& kb, const Values& x, ScalarType t) {  // x / (1 + exp(-x))
    return kb.binary(ScalarOp::kDiv, x[0],
                     kb.binary(ScalarOp::kAdd, k(kb, 1, t), kb.unary(ScalarOp::kExp, kb.unary(ScalarOp::kNeg, x[0]))));
  });
  r["aten::mish"] = unary([](KernelBuilder& kb, const Values& x, ScalarType t) {
    return kb.binary(ScalarOp::kMul, x[0], kb.unary(ScalarOp::kTanh, kb.unary(ScalarOp::kLog1p, kb.unary(ScalarOp::kExp, x[0]))));
  });
  // ATen's CPU kernels divide by 6; its CUDA kernels multiply by 1.0f / 6.0f, a float even for double.
  auto hard = [](bool times_x) {
    return [times_x](LoweringContext& c, const Node& n) {
      const bool cuda = c.meta(output(n)).device.is_cuda();
      return pointwise(c, n, {c.operand_of(n, 0)}, out_dtype(c, n), [=](KernelBuilder& kb, const Values& x, ScalarType t) {
        int gate = clamp(kb, kb.binary(ScalarOp::kAdd, x[0], k(kb, 3, t)), k(kb, 0, t), k(kb, 6, t));
        if (times_x) gate = kb.binary(ScalarOp::kMul, x[0], gate);
        return cuda ? kb.binary(ScalarOp::kMul, gate, k(kb, static_cast<double>(1.0f / 6.0f), t))
                    : kb.binary(ScalarOp::kDiv, gate, k(kb, 6, t));
      });
    };
  };
  r["aten::hardswish"] = hard(true);
  r["aten::hardsigmoid"] = hard(false);
  r["aten::gelu"] = [](LoweringContext& c, const Node& n) {
    const bool tanh = string_arg(n, 1, "none") == "tanh";
    return pointwise(c, n, {c.operand_of(n, 0)}, out_dtype(c, n), [tanh](KernelBuilder& kb, const Values& x, ScalarType t) {
      const int half_x = kb.binary(ScalarOp::kMul, x[0], k(kb, 0.5, t));
      if (!tanh) {  // x * 0.5 * (1 + erf(x / sqrt(2)))
        const int e = kb.unary(ScalarOp::kErf, kb.binary(ScalarOp::kMul, x[0], k(kb, M_SQRT1_2, t)));
        return kb.binary(ScalarOp::kMul, half_x, kb.binary(ScalarOp::kAdd, k(kb, 1, t), e));
      }
      const int cube = kb.binary(ScalarOp::kMul, kb.binary(ScalarOp::kMul, x[0], x[0]), x[0]);
      const int inner = kb.binary(ScalarOp::kMul, k(kb, M_SQRT2 * M_2_SQRTPI * 0.5, t),
                                  kb.binary(ScalarOp::kAdd, x[0], kb.binary(ScalarOp::kMul, k(kb, 0.044715, t), cube)));
      return kb.binary(ScalarOp::kMul, half_x, kb.binary(ScalarOp::kAdd, k(kb, 1, t), kb.unary(ScalarOp::kTanh, inner)));
    });
  };
  r["aten::softplus"] = [](LoweringContext& c, const Node& n) {
    const double beta = number(c, n, 1, 1), threshold = number(c, n, 2, 20);
    return pointwise(c, n, {c.operand_of(n, 0)}, out_dtype(c, n),
                     [=](KernelBuilder& kb, const Values& x, ScalarType t) { return softplus(kb, x[0], t, beta, threshold); });
  };
  r["aten::leaky_relu"] = [](LoweringContext& c, const Node& n) {
    const double slope = number(c, n, 1, 0.01);
    return pointwise(c, n, {c.operand_of(n, 0)}, out_dtype(c, n), [=](KernelBuilder& kb, const Values& x, ScalarType t) {
      return kb.where(kb.binary(ScalarOp::kGt, x[0], k(kb, 0, t)), x[0], kb.binary(ScalarOp::kMul, x[0], k(kb, slope, t)));
    });
  };
  r["aten::elu"] = [](LoweringContext& c, const Node& n) {
    const double alpha = number(c, n, 1, 1), scale = number(c, n, 2, 1), input_scale = number(c, n, 3, 1);
    return pointwise(c, n, {c.operand_of(n, 0)}, out_dtype(c, n), [=](KernelBuilder& kb, const Values& x, ScalarType t) {
      const int negative = kb.binary(ScalarOp::kMul, kb.unary(ScalarOp::kExpm1, kb.binary(ScalarOp::kMul, x[0], k(kb, input_scale, t))),
                                     k(kb, alpha * scale, t));
      return kb.where(kb.binary(ScalarOp::kLe, x[0], k(kb, 0, t)), negative, kb.binary(ScalarOp::kMul, x[0], k(kb, scale, t)));
    });
  };
  auto hardtanh = [](double lo, double hi) {
    return [lo, hi](LoweringContext& c, const Node& n) {
      const double low = number(c, n, 1, lo), high = number(c, n, 2, hi);
      return pointwise(c, n, {c.operand_of(n, 0)}, out_dtype(c, n),
                       [=](KernelBuilder& kb, const Values& x, ScalarType t) { return clamp(kb, x[0], k(kb, low, t), k(kb, high, t)); });
    };
  };
  r["aten::hardtanh"] = hardtanh(-1, 1);
  r["aten::relu6"] = hardtanh(0, 6);
}

// Copies, eval-mode dropouts, fills, float tests, logical and bitwise not.
void register_copies_and_tests(Registry& r) {
  // Identity-valued copies: the output's dtype and layout come from the trace.
  const Body identity = [](KernelBuilder&, const Values& x, ScalarType) { return x[0]; };
  for (const char* name : {"aten::clone", "aten::_to_copy", "aten::to", "aten::type_as", "aten::contiguous", "aten::positive"})
    r[name] = [identity](LoweringContext& c, const Node& n) {
      const Operand in = c.operand_of(n, 0);
      return pointwise(c, n, {in}, c.meta(in.value).dtype, identity);
    };
  r["aten::copy"] = [identity](LoweringContext& c, const Node& n) {  // functional copy: src into self's shape
    const Operand src = c.operand_of(n, 1);
    return pointwise(c, n, {src}, c.meta(src.value).dtype, identity);
  };
  // (input, p, train): with train=false every dropout is the identity; training mode draws from the RNG.
  for (const char* name : {"aten::dropout", "aten::feature_dropout", "aten::alpha_dropout", "aten::feature_alpha_dropout"})
    r[name] = [identity](LoweringContext& c, const Node& n) -> std::vector<Loader> {
      if (n.args.size() < 3 || !n.args[2].constant.isBool() || n.args[2].constant.toBool()) throw Unsupported("dropout in training mode");
      const Operand in = c.operand_of(n, 0);
      return pointwise(c, n, {in}, c.meta(in.value).dtype, identity);
    };
  r["aten::fill.Scalar"] = [identity](LoweringContext& c, const Node& n) {
    return pointwise(c, n, {c.operand_of(n, 1)}, out_dtype(c, n), identity);
  };
  r["aten::fill.Tensor"] = r["aten::fill.Scalar"];
  // Tests on floats; integers are never NaN or infinite.
  auto test = [](int kind) {
    return [kind](LoweringContext& c, const Node& n) {
      const Operand in = c.operand_of(n, 0);
      const ScalarType t = c.meta(in.value).dtype;
      return pointwise(c, n, {in}, t, [kind](KernelBuilder& kb, const Values& x, ScalarType t) {
        if (!is_floating(t)) return kb.integer(kind == 2, ScalarType::Bool);
        const int nan = kb.unary(ScalarOp::kIsNan, x[0]);
        const int inf = kb.binary(ScalarOp::kEq, kb.unary(ScalarOp::kAbs, x[0]), k(kb, INFINITY, t));
        if (kind == 0) return nan;
        if (kind == 1) return inf;
        return kb.unary(ScalarOp::kNot, kb.binary(ScalarOp::kOr, nan, inf));
      });
    };
  };
  r["aten::isnan"] = test(0);
  r["aten::isinf"] = test(1);
  r["aten::isfinite"] = test(2);
  r["aten::logical_not"] = [](LoweringContext& c, const Node& n) {
    return pointwise(c, n, {c.operand_of(n, 0)}, ScalarType::Bool,
                     [](KernelBuilder& kb, const Values& x, ScalarType) { return kb.unary(ScalarOp::kNot, x[0]); });
  };
  r["aten::bitwise_not"] = unary([](KernelBuilder& kb, const Values& x, ScalarType t) {
    return t == ScalarType::Bool ? kb.unary(ScalarOp::kNot, x[0]) : kb.unary(ScalarOp::kBitNot, x[0]);
  });
}

// ---- binary and ternary ---------------------------------------------------------------------------

// Arithmetic computed in the output's type (ATen computes in the promoted type, which is the output's).
LowerFn binary(Body body, Numbers numbers = Numbers::kRounded) {
  return [body, numbers](LoweringContext& c, const Node& n) {
    return pointwise(c, n, {c.operand_of(n, 0), c.operand_of(n, 1)}, out_dtype(c, n), body, numbers);
  };
}

LowerFn binary_op(ScalarOp op) {
  return binary([op](KernelBuilder& kb, const Values& x, ScalarType) { return kb.binary(op, x[0], x[1]); });
}

// Comparisons and logical ops compute in the promoted type of their operands; the output is bool.
// Logical ops too: ATen casts both operands to their common dtype first, then tests them against zero
// (a 0-dim float tensor holding 1e-40 meets a half tensor as half's 0: false).
LowerFn compare(ScalarOp op, bool logical) {
  return [op, logical](LoweringContext& c, const Node& n) {
    const std::vector<Operand> in = {c.operand_of(n, 0), c.operand_of(n, 1)};
    const ScalarType t = c.result_type(in);
    return pointwise(c, n, in, t, [op, logical](KernelBuilder& kb, const Values& x, ScalarType) {
      if (logical) return kb.binary(op, kb.cast(x[0], ScalarType::Bool), kb.cast(x[1], ScalarType::Bool));
      return kb.binary(op, x[0], x[1]);
    });
  };
}

// add/sub with alpha: a + alpha * b (ATen multiplies first, then adds).
LowerFn add_sub(ScalarOp op, bool reversed) {
  return [op, reversed](LoweringContext& c, const Node& n) {
    const double alpha = number(c, n, 2, 1);
    const ScalarType common = out_dtype(c, n);
    return pointwise(c, n, {c.operand_of(n, 0), c.operand_of(n, 1)}, common, [=](KernelBuilder& kb, const Values& x, ScalarType t) {
      int a = x[reversed ? 1 : 0], b = x[reversed ? 0 : 1];
      // alpha converted to the common dtype, as eager's CPU kernel takes it; for floats
      // a + alpha * b is one FMA there (sub adds -alpha)
      if (alpha != 1 && (t == ScalarType::Float || t == ScalarType::Double))
        return kb.fma(b, kb.round_to(k(kb, op == ScalarOp::kSub ? -alpha : alpha, t), common), a);
      if (alpha != 1) b = kb.binary(ScalarOp::kMul, b, kb.round_to(k(kb, alpha, t), common));
      if (t == ScalarType::Bool) return kb.binary(ScalarOp::kOr, a, b);
      return kb.binary(op, a, b);
    });
  };
}

// Integer division, remainder and fmod by zero: ATen's CPU kernels raise ZeroDivisionError, its CUDA
// kernels do not (the hardware's quotient). On the CPU a check reports it (the program then replays the
// graph eagerly, which raises); the kernel itself divides by one meanwhile.
void check_divisor(KernelBuilder& kb, int b, ScalarType t, bool cpu) {
  if (cpu && !is_floating(t) && t != ScalarType::Bool) kb.check(kb.binary(ScalarOp::kNe, b, k(kb, 0, t)));
}

// Whether node n divides on the CPU (its divisor is then checked when it divides integers, which marks its
// value as checked for the scheduler).
bool divides_on_cpu(LoweringContext& c, const Node& n) {
  const ScalarType t = c.meta(output(n)).dtype;
  const bool cpu = on_cpu(c, n);
  if (cpu && !is_floating(t) && t != ScalarType::Bool) c.run_time_checks[output(n)] = 1;
  return cpu;
}

// ATen's div_floor_floating (c10/util/generic_math.h): the quotient of a - fmod(a, b), corrected, so that
// 1.0 // 0.1 is 9 as in eager (floor(1.0 / 0.1) is 10); b == 0 gives IEEE's a / b.
int floor_divide_floating(KernelBuilder& kb, int a, int b, ScalarType t) {
  const int zero = k(kb, 0, t), one = k(kb, 1, t);
  const int mod = kb.binary(ScalarOp::kFmod, a, b);
  int div = kb.binary(ScalarOp::kDiv, kb.binary(ScalarOp::kSub, a, mod), b);
  const int signs_differ = kb.binary(ScalarOp::kNe, kb.binary(ScalarOp::kLt, b, zero), kb.binary(ScalarOp::kLt, mod, zero));
  const int adjust = kb.binary(ScalarOp::kAnd, kb.binary(ScalarOp::kNe, mod, zero), signs_differ);
  div = kb.where(adjust, kb.binary(ScalarOp::kSub, div, one), div);
  const int floored = kb.unary(ScalarOp::kFloor, div);
  const int rounded = kb.where(kb.binary(ScalarOp::kGt, kb.binary(ScalarOp::kSub, div, floored), k(kb, 0.5, t)),
                               kb.binary(ScalarOp::kAdd, floored, one), floored);
  const int quotient = kb.binary(ScalarOp::kDiv, a, b);
  const int signed_zero = kb.binary(ScalarOp::kMul, quotient, zero);  // copysign(0, a / b): a / b is finite here
  const int result = kb.where(kb.binary(ScalarOp::kNe, div, zero), rounded, signed_zero);
  return kb.where(kb.binary(ScalarOp::kEq, b, zero), quotient, result);
}

int floor_divide(KernelBuilder& kb, int a, int b, ScalarType t, bool cpu) {
  if (is_floating(t)) return floor_divide_floating(kb, a, b, t);
  check_divisor(kb, b, t, cpu);
  return kb.binary(ScalarOp::kFloorDiv, a, b);
}

int divide(KernelBuilder& kb, int a, int b, ScalarType t, const std::string& mode, bool cpu) {
  if (mode == "floor") return floor_divide(kb, a, b, t, cpu);
  if (!is_floating(t)) check_divisor(kb, b, t, cpu);  // trunc: only integers divide as integers
  const int q = kb.binary(ScalarOp::kDiv, a, b);
  return mode == "trunc" && is_floating(t) ? kb.unary(ScalarOp::kTrunc, q) : q;
}

// ATen's shifts (BinaryOpsKernel.cpp): a left shift by a negative amount or by the width or more is 0; a
// right shift by such an amount fills with the sign (0 for unsigned types). C's (and LLVM's) shifts leave
// those amounts undefined, so the shift itself takes an amount in range.
int shift(KernelBuilder& kb, int a, int b, ScalarType t, bool left) {
  const int64_t width = static_cast<int64_t>(c10::elementSize(t)) * 8;
  const bool is_signed = c10::isSignedType(t);
  const int64_t limit = left || !is_signed ? width : width - 1;
  const int zero = k(kb, 0, t);
  const int negative = is_signed ? kb.binary(ScalarOp::kLt, b, zero) : kb.integer(0, ScalarType::Bool);
  const int out_of_range = kb.binary(ScalarOp::kOr, negative, kb.binary(ScalarOp::kGe, b, k(kb, static_cast<double>(limit), t)));
  const int amount = kb.where(out_of_range, zero, b);
  const int shifted = kb.binary(left ? ScalarOp::kShl : ScalarOp::kShr, a, amount);
  if (left || !is_signed) return kb.where(out_of_range, zero, shifted);
  return kb.where(out_of_range, kb.binary(ScalarOp::kShr, a, k(kb, static_cast<double>(width - 1), t)), shifted);
}

// pow(x, exponent) with ATen's special cases for a constant exponent (they round differently from powf).
int power(KernelBuilder& kb, int x, int e, std::optional<double> constant, ScalarType t) {
  if (constant && is_floating(t)) {
    const double p = *constant;
    if (p == 2) return kb.binary(ScalarOp::kMul, x, x);
    if (p == 3) return kb.binary(ScalarOp::kMul, kb.binary(ScalarOp::kMul, x, x), x);
    if (p == 0.5) return kb.unary(ScalarOp::kSqrt, x);
    if (p == -0.5) return kb.unary(ScalarOp::kRsqrt, x);
    if (p == -1) return kb.binary(ScalarOp::kDiv, k(kb, 1, t), x);
    if (p == -2) return kb.binary(ScalarOp::kDiv, k(kb, 1, t), kb.binary(ScalarOp::kMul, x, x));
  }
  return kb.binary(ScalarOp::kPow, x, e);
}

// Arithmetic: add, sub, mul, the divisions and remainders, pow.
void register_arithmetic(Registry& r) {
  r["aten::add"] = add_sub(ScalarOp::kAdd, false);
  r["aten::sub"] = add_sub(ScalarOp::kSub, false);
  r["aten::rsub"] = add_sub(ScalarOp::kSub, true);
  r["aten::mul"] = binary(
      [](KernelBuilder& kb, const Values& x, ScalarType t) {
        return t == ScalarType::Bool ? kb.binary(ScalarOp::kAnd, x[0], x[1]) : kb.binary(ScalarOp::kMul, x[0], x[1]);
      },
      Numbers::kOriginal);
  r["aten::div"] = [](LoweringContext& c, const Node& n) {
    const std::string mode = string_arg(n, 2, "");
    const bool cpu = divides_on_cpu(c, n);
    return pointwise(
        c, n, {c.operand_of(n, 0), c.operand_of(n, 1)}, out_dtype(c, n),
        [mode, cpu](KernelBuilder& kb, const Values& x, ScalarType t) { return divide(kb, x[0], x[1], t, mode, cpu); }, Numbers::kOriginal);
  };
  r["aten::true_divide"] =
      binary([](KernelBuilder& kb, const Values& x, ScalarType) { return kb.binary(ScalarOp::kDiv, x[0], x[1]); }, Numbers::kOriginal);
  r["aten::floor_divide"] = [](LoweringContext& c, const Node& n) {
    return binary(
        [cpu = divides_on_cpu(c, n)](KernelBuilder& kb, const Values& x, ScalarType t) { return floor_divide(kb, x[0], x[1], t, cpu); },
        Numbers::kOriginal)(c, n);
  };
  // remainder: Python's (the divisor's sign); fmod: C's (the dividend's sign).
  for (const auto& [name, op] : {std::pair{"aten::remainder", ScalarOp::kRem}, std::pair{"aten::fmod", ScalarOp::kFmod}})
    r[name] = [op](LoweringContext& c, const Node& n) {
      return binary([op, cpu = divides_on_cpu(c, n)](KernelBuilder& kb, const Values& x, ScalarType t) {
        check_divisor(kb, x[1], t, cpu);
        return kb.binary(op, x[0], x[1]);
      })(c, n);
    };
  r["aten::pow"] = [](LoweringContext& c, const Node& n) {
    const Operand base = c.operand_of(n, 0), exponent = c.operand_of(n, 1);
    std::optional<double> constant;
    if (!exponent.is_tensor() && !exponent.symbolic) constant = exponent.scalar.toDouble();
    // Half takes std::pow in float in eager's CPU kernel, without the special cases (pow(-inf, 0.5) is
    // inf there, sqrt's -nan); bfloat16 takes them as float does (probed: the semantics test below).
    const ScalarType out = out_dtype(c, n);
    if (out == ScalarType::Half) constant.reset();
    return pointwise(c, n, {base, exponent}, out,
                     [constant](KernelBuilder& kb, const Values& x, ScalarType t) { return power(kb, x[0], x[1], constant, t); });
  };
}

// atan2, maximum/minimum, bitwise and logical ops, comparisons, where, masked_fill.
void register_logic_and_selection(Registry& r) {
  r["aten::atan2"] = binary_op(ScalarOp::kAtan2);
  r["aten::maximum"] = binary_op(ScalarOp::kMax);
  r["aten::minimum"] = binary_op(ScalarOp::kMin);
  for (const char* name : {"aten::bitwise_and", "aten::__and__"}) r[name] = binary_op(ScalarOp::kAnd);
  for (const char* name : {"aten::bitwise_or", "aten::__or__"}) r[name] = binary_op(ScalarOp::kOr);
  for (const char* name : {"aten::bitwise_xor", "aten::__xor__"}) r[name] = binary_op(ScalarOp::kXor);
  r["aten::bitwise_left_shift"] = binary([](KernelBuilder& kb, const Values& x, ScalarType t) { return shift(kb, x[0], x[1], t, true); });
  r["aten::bitwise_right_shift"] = binary([](KernelBuilder& kb, const Values& x, ScalarType t) { return shift(kb, x[0], x[1], t, false); });
  r["aten::logical_and"] = compare(ScalarOp::kAnd, true);
  r["aten::logical_or"] = compare(ScalarOp::kOr, true);
  r["aten::logical_xor"] = compare(ScalarOp::kXor, true);
  const std::pair<const char*, ScalarOp> comparisons[] = {{"aten::eq", ScalarOp::kEq}, {"aten::ne", ScalarOp::kNe},
                                                          {"aten::lt", ScalarOp::kLt}, {"aten::le", ScalarOp::kLe},
                                                          {"aten::gt", ScalarOp::kGt}, {"aten::ge", ScalarOp::kGe}};
  for (const auto& [name, op] : comparisons) r[name] = compare(op, false);
  // where.self, and where.ScalarSelf / ScalarOther / Scalar with a number in place of a tensor.
  auto where = [](LoweringContext& c, const Node& n) {
    return pointwise(
        c, n, {c.operand_of(n, 0), c.operand_of(n, 1), c.operand_of(n, 2)}, out_dtype(c, n),
        [](KernelBuilder& kb, const Values& x, ScalarType t) { return kb.where(kb.cast(x[0], ScalarType::Bool), x[1], x[2]); });
  };
  for (const char* name : {"aten::where.self", "aten::where.ScalarSelf", "aten::where.ScalarOther", "aten::where.Scalar"}) r[name] = where;
  r["aten::masked_fill"] = [](LoweringContext& c, const Node& n) {
    return pointwise(c, n, {c.operand_of(n, 0), c.operand_of(n, 1), c.operand_of(n, 2)}, out_dtype(c, n),
                     [](KernelBuilder& kb, const Values& x, ScalarType) { return kb.where(kb.cast(x[1], ScalarType::Bool), x[2], x[0]); });
  };
}

// binary_cross_entropy(x, y, weight?, reduction None) on the CPU in float and double (the loss
// decomposition reduces it): ATen's CPU kernel, (y - 1) * max(log1p(-x), -100) - y * max(log(x), -100),
// times the weight. Eager raises where an input or target lies outside [0, 1] (NaN included): a check
// reports it. On CUDA eager's kernel asserts on the device instead, which a kernel does not: extern there.
std::vector<Loader> binary_cross_entropy(LoweringContext& c, const Node& n) {
  const ScalarType t = out_dtype(c, n);
  if (number(c, n, 3, -1) != 0 || !on_cpu(c, n) || (t != ScalarType::Float && t != ScalarType::Double))
    throw Unsupported("binary_cross_entropy is lowered unreduced, in float or double, on the CPU");
  std::vector<Operand> operands{c.operand_of(n, 0), c.operand_of(n, 1)};
  if (n.args[2].kind == graph::Arg::Kind::kValue) operands.push_back(c.operand_of(n, 2));
  c.run_time_checks[output(n)] = 1;
  return pointwise(c, n, operands, t, [](KernelBuilder& kb, const Values& x, ScalarType t) {
    const int zero = k(kb, 0, t), one = k(kb, 1, t), floor = k(kb, -100, t);
    auto in_unit_range = [&](int v) {
      return kb.binary(ScalarOp::kAnd, kb.binary(ScalarOp::kGe, v, zero), kb.binary(ScalarOp::kLe, v, one));
    };
    kb.check(kb.binary(ScalarOp::kAnd, in_unit_range(x[0]), in_unit_range(x[1])));
    const int log_x = kb.binary(ScalarOp::kMax, kb.unary(ScalarOp::kLog, x[0]), floor);
    const int log_1mx = kb.binary(ScalarOp::kMax, kb.unary(ScalarOp::kLog1p, kb.unary(ScalarOp::kNeg, x[0])), floor);
    const int loss = kb.binary(ScalarOp::kSub, kb.binary(ScalarOp::kMul, kb.binary(ScalarOp::kSub, x[1], one), log_1mx),
                               kb.binary(ScalarOp::kMul, x[1], log_x));
    return x.size() == 3 ? kb.binary(ScalarOp::kMul, loss, x[2]) : loss;
  });
}

// clamp and its forms, addcmul/addcdiv, lerp.
void register_ternary(Registry& r) {
  auto clamp_lowering = [](bool has_min, bool has_max) {
    return [has_min, has_max](LoweringContext& c, const Node& n) {
      std::vector<Operand> in = {c.operand_of(n, 0)};
      std::vector<int> slot;  // operand positions of min and max (-1: absent)
      for (size_t i : {size_t{1}, size_t{2}}) {
        const bool wanted = i == 1 ? has_min : has_max;
        const bool present = wanted && i < n.args.size() && !(n.args[i].kind == graph::Arg::Kind::kConstant && n.args[i].constant.isNone());
        slot.push_back(present ? static_cast<int>(in.size()) : -1);
        if (present) in.push_back(c.operand_of(n, has_min && has_max ? i : 1));
      }
      // aten::clamp with one bound runs ATen's clamp_min/clamp_max kernel, std::max(a, bound): a NaN
      // number as that bound leaves x as it is (clamp_min the op, and clamp with both bounds, fill NaN).
      if (has_min && has_max && in.size() == 2 && !in[1].is_tensor() && !in[1].symbolic && std::isnan(in[1].scalar.toDouble()))
        return pointwise(c, n, {in[0]}, out_dtype(c, n), [](KernelBuilder&, const Values& x, ScalarType) { return x[0]; });
      return pointwise(c, n, in, out_dtype(c, n), [slot](KernelBuilder& kb, const Values& x, ScalarType) {
        std::optional<int> lo, hi;
        if (slot[0] >= 0) lo = x[slot[0]];
        if (slot[1] >= 0) hi = x[slot[1]];
        return clamp(kb, x[0], lo, hi);
      });
    };
  };
  r["aten::clamp"] = clamp_lowering(true, true);
  r["aten::clip"] = clamp_lowering(true, true);
  r["aten::clamp_min"] = clamp_lowering(true, false);
  r["aten::clamp_max"] = [](LoweringContext& c, const Node& n) {
    return pointwise(c, n, {c.operand_of(n, 0), c.operand_of(n, 1)}, out_dtype(c, n),
                     [](KernelBuilder& kb, const Values& x, ScalarType) { return clamp(kb, x[0], std::nullopt, x[1]); });
  };
  // addcmul / addcdiv: self + value * t1 (* or /) t2.
  auto addc = [](ScalarOp op) {
    return [op](LoweringContext& c, const Node& n) {
      const double value = number(c, n, 3, 1);
      return pointwise(c, n, {c.operand_of(n, 0), c.operand_of(n, 1), c.operand_of(n, 2)}, out_dtype(c, n),
                       [=](KernelBuilder& kb, const Values& x, ScalarType t) {
                         // ATen's CPU kernel: self + value * t1 * t2 and self + value * t1 / t2, left to right
                         // (value * t1 first: 2 * 3e38 / 2 is inf there). Its addcmul of floats is one FMA,
                         // fma(value * t1, t2, self): the product is not rounded (nor overflows) on its own.
                         const int scaled = kb.binary(ScalarOp::kMul, k(kb, value, t), x[1]);
                         if (op == ScalarOp::kMul && (t == ScalarType::Float || t == ScalarType::Double)) return kb.fma(scaled, x[2], x[0]);
                         return kb.binary(ScalarOp::kAdd, x[0], kb.binary(op, scaled, x[2]));
                       });
    };
  };
  r["aten::addcmul"] = addc(ScalarOp::kMul);
  r["aten::binary_cross_entropy"] = binary_cross_entropy;
  r["aten::addcdiv"] = addc(ScalarOp::kDiv);
  // ATen: |w| < 0.5 ? a + w*(b-a) : b - (b-a)*(1-w), each a single FMA in its CPU kernels (float and double)
  // and its CUDA ones (nvcc contracts them)
  r["aten::lerp"] = [](LoweringContext& c, const Node& n) {
    return pointwise(
        c, n, {c.operand_of(n, 0), c.operand_of(n, 1), c.operand_of(n, 2)}, out_dtype(c, n),
        [](KernelBuilder& kb, const Values& x, ScalarType t) {
          const int diff = kb.binary(ScalarOp::kSub, x[1], x[0]);
          const int low = kb.fma(x[2], diff, x[0]);
          const int high = kb.fma(kb.unary(ScalarOp::kNeg, diff), kb.binary(ScalarOp::kSub, k(kb, 1, t), x[2]), x[1]);
          return kb.where(kb.binary(ScalarOp::kLt, kb.unary(ScalarOp::kAbs, x[2]), k(kb, 0.5, t)), low, high);
        },
        Numbers::kOriginal);  // a number weight enters half and bfloat16 kernels as a float
  };
}

}  // namespace

std::vector<Loader> pointwise_loaders(LoweringContext& c, const Node& n, const std::vector<Operand>& operands, ScalarType compute,
                                      const PointwiseBody& body) {
  return pointwise(c, n, operands, compute, body);
}

void register_pointwise(Registry& r) {
  register_math(r);
  register_activations(r);
  register_copies_and_tests(r);
  register_arithmetic(r);
  register_logic_and_selection(r);
  register_ternary(r);
}

}  // namespace jitc::inductor
