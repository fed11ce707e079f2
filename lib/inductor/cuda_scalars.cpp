// How kernel IR scalars print as CUDA C: compute and storage types, literals, math function names,
// reduction identities and combiners. Shared by the CUDA printer's pieces.
#include "inductor/cuda_scalars.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

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
    default: throw std::invalid_argument(fmt::format("cuda codegen: no compute type for {}", c10::toString(t)));
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
      return is_unsigned(t) ? "0" : fmt::format("({})(-{}ll - 1)", c_type(t), (int64_t{1} << (bits(t) - 1)) - 1);
    case ReduceKind::kMin:
    case ReduceKind::kArgMin:
      if (f) return literal(INFINITY, t);
      return is_unsigned(t) ? (t == ScalarType::Bool ? "1" : "255") : fmt::format("({}){}ll", c_type(t), (int64_t{1} << (bits(t) - 1)) - 1);
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
    default: throw std::invalid_argument("cuda codegen: bad reduction");
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

std::vector<bool> index_expressions(const Kernel& k) {
  std::vector<bool> index(k.body.size(), false);
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    if (e.dtype != ScalarType::Long) continue;
    bool from_indices = true;
    for (int operand : {e.a, e.b, e.c}) from_indices = from_indices && (operand < 0 || index[operand]);
    const bool leaf = e.op == ScalarOp::kVar || e.op == ScalarOp::kSym || e.op == ScalarOp::kConst;
    const bool arithmetic = e.op == ScalarOp::kAdd || e.op == ScalarOp::kSub || e.op == ScalarOp::kMul ||
                            e.op == ScalarOp::kDiv || e.op == ScalarOp::kRem || e.op == ScalarOp::kMax || e.op == ScalarOp::kMin;
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
