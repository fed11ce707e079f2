// How kernel IR scalars print as CUDA C: compute and storage types, literals, math function names,
// reduction identities and combiners. Shared by the CUDA printer's pieces.
#include "inductor/cuda/scalars.h"

#include <jitc/detail/internal_assert.h>

#include <fmt/format.h>

#include <cmath>

namespace jitc::inductor::cuda {

using c10::ScalarType;

bool is_float(ScalarType t) { return t == ScalarType::Float || t == ScalarType::Double; }
bool is_unsigned(ScalarType t) { return t == ScalarType::Byte || t == ScalarType::Bool; }

const char* c_type(ScalarType t) {
  switch (t) {
    case ScalarType::Float: return "float";
    case ScalarType::Double: return "double";
    case ScalarType::Long: return "long long";
    case ScalarType::Int: return "int";
    case ScalarType::Short: return "short";
    case ScalarType::Char: return "signed char";
    case ScalarType::Byte: return "unsigned char";
    case ScalarType::Bool: return "bool";
    default: JITC_INTERNAL_UNREACHABLE(fmt::format("cuda codegen: no compute type for {}", c10::toString(t)));
  }
}

const char* storage_type(ScalarType t) {
  switch (t) {
    case ScalarType::Half:
    case ScalarType::BFloat16: return "unsigned short";
    case ScalarType::Bool: return "unsigned char";
    default: return c_type(t);
  }
}

std::string literal(double v, ScalarType t) {
  if (std::isnan(v)) return t == ScalarType::Float ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000ll)";
  if (std::isinf(v)) return fmt::format("{}__int_as_float(0x7f800000)", v < 0 ? "-" : "");
  return t == ScalarType::Float ? fmt::format("{:.9e}f", static_cast<float>(v)) : fmt::format("{:.17e}", v);
}

int bits(ScalarType t) {
  switch (t) {
    case ScalarType::Long: return 64;
    case ScalarType::Int: return 32;
    case ScalarType::Short: return 16;
    default: return 8;
  }
}

namespace {
// The largest value of a signed integer of `width` bits, computed without overflow (int64 included).
int64_t signed_max(int width) { return static_cast<int64_t>((uint64_t{1} << (width - 1)) - 1); }
}  // namespace

std::string identity(ReduceKind kind, ScalarType t) {
  const bool f = is_float(t);
  switch (kind) {
    case ReduceKind::kSum: return f ? literal(0, t) : "0";
    case ReduceKind::kProd: return f ? literal(1, t) : "1";
    case ReduceKind::kAny: return "0";
    case ReduceKind::kAll: return "1";
    case ReduceKind::kMax:
    case ReduceKind::kArgMax:
      if (f) return literal(-INFINITY, t);
      return is_unsigned(t) ? "0" : fmt::format("({})(-{}ll - 1)", c_type(t), signed_max(bits(t)));
    case ReduceKind::kMin:
    case ReduceKind::kArgMin:
      if (f) return literal(INFINITY, t);
      return is_unsigned(t) ? (t == ScalarType::Bool ? "1" : "255") : fmt::format("({}){}ll", c_type(t), signed_max(bits(t)));
  }
  return "0";
}

const char* combiner(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum: return "a + b";
    case ReduceKind::kProd: return "a * b";
    case ReduceKind::kAny: return "a | b";
    case ReduceKind::kAll: return "a & b";
    case ReduceKind::kMax: return "max_nan(a, b)";
    case ReduceKind::kMin: return "min_nan(a, b)";
    default: JITC_INTERNAL_UNREACHABLE("cuda codegen: bad reduction");
  }
}

const char* math_name(ScalarOp op) {
  switch (op) {
    case ScalarOp::kExp: return "exp";
    case ScalarOp::kExp2: return "exp2";
    case ScalarOp::kExpm1: return "expm1";
    case ScalarOp::kLog: return "log";
    case ScalarOp::kLog2: return "log2";
    case ScalarOp::kLog10: return "log10";
    case ScalarOp::kLog1p: return "log1p";
    case ScalarOp::kSqrt: return "sqrt";
    case ScalarOp::kRsqrt: return "rsqrt";
    case ScalarOp::kSin: return "sin";
    case ScalarOp::kCos: return "cos";
    case ScalarOp::kTan: return "tan";
    case ScalarOp::kAsin: return "asin";
    case ScalarOp::kAcos: return "acos";
    case ScalarOp::kAtan: return "atan";
    case ScalarOp::kSinh: return "sinh";
    case ScalarOp::kCosh: return "cosh";
    case ScalarOp::kTanh: return "tanh";
    case ScalarOp::kAsinh: return "asinh";
    case ScalarOp::kAcosh: return "acosh";
    case ScalarOp::kAtanh: return "atanh";
    case ScalarOp::kErf: return "erf";
    case ScalarOp::kErfc: return "erfc";
    case ScalarOp::kFloor: return "floor";
    case ScalarOp::kCeil: return "ceil";
    case ScalarOp::kRound: return "rint";
    case ScalarOp::kTrunc: return "trunc";
    default: return nullptr;
  }
}

const char* vector_type(size_t bytes) {
  switch (bytes) {
    case 2: return "unsigned short";
    case 4: return "unsigned int";
    case 8: return "uint2";
    case 16: return "uint4";
    default: JITC_INTERNAL_UNREACHABLE(fmt::format("cuda codegen: no {}-byte vector type", bytes));
  }
}

std::string value_of(const Expr& e, const std::string& ty, const std::string& a, const std::string& b, const std::string& c) {
  const ScalarType t = e.dtype;
  const bool f = is_float(t);
  if (const char* fn = math_name(e.op); fn && f) return fmt::format("{}{}({})", fn, t == ScalarType::Float ? "f" : "", a);
  switch (e.op) {
    case ScalarOp::kCast: return t == ScalarType::Bool ? fmt::format("({} != 0)", a) : fmt::format("({})({})", ty, a);
    case ScalarOp::kRoundTo:
      return static_cast<ScalarType>(e.ivalue) == ScalarType::Half ? fmt::format("half_to_float(float_to_half({}))", a)
                                                                   : fmt::format("bf16_to_float(float_to_bf16({}))", a);
    case ScalarOp::kWhere: return fmt::format("{} ? {} : {}", a, b, c);
    case ScalarOp::kFma: return fmt::format("{}({}, {}, {})", t == ScalarType::Float ? "fmaf" : "fma", a, b, c);
    case ScalarOp::kNeg: return t == ScalarType::Bool ? a : fmt::format("({})(-{})", ty, a);
    case ScalarOp::kAbs: return f ? fmt::format("fabs({})", a) : is_unsigned(t) ? a : fmt::format("({})({} < 0 ? -{} : {})", ty, a, a, a);
    case ScalarOp::kFloor:
    case ScalarOp::kCeil:
    case ScalarOp::kRound:
    case ScalarOp::kTrunc: return a;  // integers
    case ScalarOp::kNot: return fmt::format("!{}", a);
    case ScalarOp::kBitNot: return fmt::format("({})(~{})", ty, a);
    case ScalarOp::kIsNan: return fmt::format("({} != {})", a, a);
    case ScalarOp::kSign: return fmt::format("sign_of<{}>({})", ty, a);
    case ScalarOp::kAdd: return fmt::format("({})({} + {})", ty, a, b);
    case ScalarOp::kSub: return fmt::format("({})({} - {})", ty, a, b);
    case ScalarOp::kMul: return fmt::format("({})({} * {})", ty, a, b);
    case ScalarOp::kDiv: return f ? fmt::format("{} / {}", a, b) : fmt::format("({})({} / safe_divisor({}))", ty, a, b);
    case ScalarOp::kFloorDiv: return f ? fmt::format("floor({} / {})", a, b) : fmt::format("floor_div_int<{}>({}, {})", ty, a, b);
    case ScalarOp::kRem: return f ? fmt::format("rem_float<{}>({}, {})", ty, a, b) : fmt::format("rem_int<{}>({}, {})", ty, a, b);
    case ScalarOp::kFmod: return f ? fmt::format("fmod({}, {})", a, b) : fmt::format("({})({} % safe_divisor({}))", ty, a, b);
    case ScalarOp::kPow: return f ? fmt::format("pow({}, {})", a, b) : fmt::format("pow_int<{}>({}, {})", ty, a, b);
    case ScalarOp::kAtan2: return fmt::format("atan2({}, {})", a, b);
    case ScalarOp::kMax: return fmt::format("max_nan<{}>({}, {})", ty, a, b);
    case ScalarOp::kMin: return fmt::format("min_nan<{}>({}, {})", ty, a, b);
    case ScalarOp::kAnd: return fmt::format("({})({} & {})", ty, a, b);
    case ScalarOp::kOr: return fmt::format("({})({} | {})", ty, a, b);
    case ScalarOp::kXor: return fmt::format("({})({} ^ {})", ty, a, b);
    case ScalarOp::kShl: return fmt::format("({})({} << {})", ty, a, b);
    case ScalarOp::kShr: return fmt::format("({})({} >> {})", ty, a, b);
    case ScalarOp::kEq: return fmt::format("({} == {})", a, b);
    case ScalarOp::kNe: return fmt::format("({} != {})", a, b);
    case ScalarOp::kLt: return fmt::format("({} < {})", a, b);
    case ScalarOp::kLe: return fmt::format("({} <= {})", a, b);
    case ScalarOp::kGt: return fmt::format("({} > {})", a, b);
    case ScalarOp::kGe: return fmt::format("({} >= {})", a, b);
    default: JITC_INTERNAL_UNREACHABLE(fmt::format("cuda codegen: {} on {}", op_name(e.op), c10::toString(t)));
  }
}

std::vector<bool> index_expressions(const Kernel& k) {
  std::vector<bool> index(k.body.size(), false);
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    if (e.dtype != ScalarType::Long) continue;
    bool from_indices = true;
    for (int operand : {e.a, e.b, e.c}) from_indices = from_indices && (operand < 0 || index[operand]);
    const bool leaf = e.op == ScalarOp::kVar || e.op == ScalarOp::kSym || e.op == ScalarOp::kConst;
    const bool arithmetic = e.op == ScalarOp::kAdd || e.op == ScalarOp::kSub || e.op == ScalarOp::kMul || e.op == ScalarOp::kDiv ||
                            e.op == ScalarOp::kRem || e.op == ScalarOp::kMax || e.op == ScalarOp::kMin;
    index[i] = leaf || (arithmetic && from_indices);
  }
  return index;
}

namespace {

// Whether `user` of float32 `value` only rounds it to 16 bits, given which later values are relaxed.
bool rounds_to_16_bits(const Kernel& k, int user, int value, const std::vector<bool>& relaxed) {
  const Expr& u = k.body[user];
  switch (u.op) {
    case ScalarOp::kRoundTo: return true;
    case ScalarOp::kStore: {
      const ScalarType t = k.buffers[u.buffer].dtype;
      return u.b == value && (t == ScalarType::Half || t == ScalarType::BFloat16);
    }
    case ScalarOp::kAdd:
    case ScalarOp::kSub:
    case ScalarOp::kMul:
    case ScalarOp::kDiv:
    case ScalarOp::kNeg:
    case ScalarOp::kExp: return u.dtype == ScalarType::Float && relaxed[user];
    default: return false;
  }
}

}  // namespace

// The error of __expf and div.full.f32 (a few float32 ulps) is far below a 16-bit rounding step, while
// the exact versions cost a kernel near compute-bound (bf16 sigmoid(x) * x) about a third of its
// instructions. Triton's kernels for torch.compile use these approximations everywhere; here float32
// results keep the exact ones.
std::vector<bool> relaxed_math(const Kernel& k) {
  std::vector<std::vector<int>> users(k.body.size());
  for (size_t i = 0; i < k.body.size(); ++i)
    for (int operand : {k.body[i].a, k.body[i].b, k.body[i].c})
      if (operand >= 0) users[operand].push_back(static_cast<int>(i));
  std::vector<bool> relaxed(k.body.size(), false);
  for (size_t i = k.body.size(); i-- > 0;) {  // users come after their operands
    if (k.body[i].dtype != ScalarType::Float || users[i].empty()) continue;
    bool only_rounded = true;
    for (int u : users[i]) only_rounded = only_rounded && rounds_to_16_bits(k, u, static_cast<int>(i), relaxed);
    relaxed[i] = only_rounded;
  }
  return relaxed;
}

}  // namespace jitc::inductor::cuda
