// Scalar expressions of the CPU code generator as LLVM IR (see printer.h): one instruction or a
// short sequence per kernel IR expression, loads and stores with their dtype conversions, and the
// identities and combiners of reductions.
#include "inductor/cpu/printer.h"
#include "inductor/kernel_builder.h"

#include <jitc/detail/internal_assert.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <utility>

namespace jitc::inductor::llvm_ir {

namespace {
// The largest value of a signed integer of `width` bits, computed without overflow (int64 included).
int64_t signed_max(int width) { return static_cast<int64_t>((uint64_t{1} << (width - 1)) - 1); }
}  // namespace

std::string Printer::identity(ReduceKind kind, ScalarType t) {
  const bool f = is_float(t);
  switch (kind) {
    case ReduceKind::kSum: return f ? "0.0" : "0";
    case ReduceKind::kProd: return f ? "1.0" : "1";
    case ReduceKind::kAny: return "false";
    case ReduceKind::kAll: return "true";
    case ReduceKind::kMax:
    case ReduceKind::kArgMax:
      if (f) return float_literal(-std::numeric_limits<double>::infinity(), t);
      return t == ScalarType::Bool ? "false" : is_unsigned(t) ? "0" : std::to_string(-signed_max(bits(t)) - 1);
    case ReduceKind::kMin:
    case ReduceKind::kArgMin:
      if (f) return float_literal(std::numeric_limits<double>::infinity(), t);
      if (t == ScalarType::Bool) return "true";
      return is_unsigned(t) ? "-1" : std::to_string(signed_max(bits(t)));
  }
  return "0";
}

// The accumulator update. Floating sums and products may be reassociated (so they vectorize);
// max/min propagate NaN as ATen's do. The reassociation must stay with the accumulator: `reassoc` lets
// InstCombine rewrite the value's own expression too (prod(x / x) became prod(x) / prod(x): 0 or NaN
// where x is tiny; prod(pow(x, c)) became pow(prod(x), c): inf where eager has NaN). A product's value
// enters through an arithmetic fence, which reassociation does not cross (its loop no longer
// vectorizes: products are rare); a sum's through a freeze, which keeps the loop vectorized and which
// InstCombine's patterns do not look through (it can push a freeze into the operands, which is what
// let the pow rewrite through a freeze: sums have no such rewrite found yet).
std::string Printer::combine(ReduceKind kind, ScalarType t, const std::string& acc, const std::string& value) {
  const std::string out = fresh("acc");
  const char* ty = compute_type(t);
  const bool f = is_float(t);
  std::string v = value;
  if (f && kind == ReduceKind::kSum) {
    v = fresh("opaque");
    line(fmt::format("{} = freeze {} {}", v, ty, value));
  }
  if (f && kind == ReduceKind::kProd) {
    const char* suffix = t == ScalarType::Float ? "f32" : "f64";
    declare(fmt::format("{} @llvm.arithmetic.fence.{}({})", ty, suffix, ty));
    v = fresh("fenced");
    line(fmt::format("{} = call {} @llvm.arithmetic.fence.{}({} {})", v, ty, suffix, ty, value));
  }
  switch (kind) {
    case ReduceKind::kSum: line(fmt::format("{} = {} {} {}, {}", out, f ? "fadd reassoc" : "add", ty, acc, v)); break;
    case ReduceKind::kProd: line(fmt::format("{} = {} {} {}, {}", out, f ? "fmul reassoc" : "mul", ty, acc, v)); break;
    case ReduceKind::kAny: line(fmt::format("{} = or i1 {}, {}", out, acc, v)); break;
    case ReduceKind::kAll: line(fmt::format("{} = and i1 {}, {}", out, acc, v)); break;
    case ReduceKind::kMax:
    case ReduceKind::kMin: {
      const std::string take = better(kind == ReduceKind::kMax, t, v, acc);
      line(fmt::format("{} = select i1 {}, {} {}, {} {}", out, take, ty, v, ty, acc));
      break;
    }
    default: JITC_INTERNAL_UNREACHABLE("cpu codegen: bad reduction");
  }
  return out;
}

// i1: does v replace the accumulator? Strictly better (ties keep the first), or a first NaN.
std::string Printer::better(bool max, ScalarType t, const std::string& v, const std::string& acc) {
  const std::string out = fresh("better");
  if (!is_float(t)) {
    const char* cmp = max ? (is_unsigned(t) ? "ugt" : "sgt") : (is_unsigned(t) ? "ult" : "slt");
    line(fmt::format("{} = icmp {} {} {}, {}", out, cmp, compute_type(t), v, acc));
    return out;
  }
  const char* ty = compute_type(t);
  const std::string cmp = fresh("cmp"), vnan = fresh("vnan"), anan = fresh("anan"), either = fresh("either");
  line(fmt::format("{} = fcmp {} {} {}, {}", cmp, max ? "ogt" : "olt", ty, v, acc));
  line(fmt::format("{} = fcmp uno {} {}, {}", vnan, ty, v, v));
  line(fmt::format("{} = fcmp ord {} {}, {}", anan, ty, acc, acc));  // acc is not NaN
  line(fmt::format("{} = and i1 {}, {}", either, vnan, anan));
  line(fmt::format("{} = or i1 {}, {}", out, cmp, either));
  return out;
}

// ---- expressions ------------------------------------------------------------------------------
std::string Printer::name(int e) const {
  if (scope_[e] == Scope::kEntry) return fmt::format("%e{}", e);
  return fmt::format("%e{}{}{}", e, suffix_, scope_[e] == Scope::kElement ? element_suffix_ : "");
}

// Emits expression i and whatever it needs that this context has not computed yet. A reduction's result
// is emitted after its loop (one row at a time) or read from its lane array (rows side by side).
std::string Printer::emit(int i) {
  if (emitted_[i]) return name(i);
  emitted_[i] = true;
  if (!lane_array_[i].empty()) {
    load_lane(i);
    return name(i);
  }
  if (load_cached(i) || load_position_value(i)) return name(i);
  const Expr& e = k_.body[i];
  for (int operand : {e.a, e.b, e.c})
    if (operand >= 0 && !emitted_[operand] && (k_.body[operand].op != ScalarOp::kReduce || !lane_array_[operand].empty())) emit(operand);
  expr(i, e);
  store_if_cached(i);
  return name(i);
}

std::vector<std::string> Printer::emit_with(const std::vector<int>& exprs, int var, const std::string& value) {
  return emit_with(exprs, {{var, value}});
}

std::vector<std::string> Printer::emit_with(const std::vector<int>& exprs, const std::vector<std::pair<int, std::string>>& values) {
  auto saved = emitted_;
  const std::string saved_suffix = suffix_;
  std::vector<std::string> saved_values;
  for (const auto& [var, value] : values) saved_values.push_back(std::exchange(var_value_[var], value));
  suffix_ = "." + fresh("at").substr(1);
  for (size_t i = 0; i < k_.body.size(); ++i) emitted_[i] = scope_[i] == Scope::kEntry;
  std::vector<std::string> names;
  for (int e : exprs) names.push_back(emit(e));
  emitted_ = std::move(saved);
  suffix_ = saved_suffix;
  for (size_t k = 0; k < values.size(); ++k) var_value_[values[k].first] = saved_values[k];
  return names;
}

Printer::ExprNames Printer::names_of(int i, const Expr& e) const {
  return {name(i),
          e.a >= 0 ? name(e.a) : "",
          e.b >= 0 ? name(e.b) : "",
          e.dtype,
          e.a >= 0 ? k_.body[e.a].dtype : e.dtype,
          compute_type(e.dtype),
          is_float(e.dtype)};
}

// Leaves, memory, casts, selects and checks here; math in unary_expr and binary_expr.
void Printer::expr(int i, const Expr& e) {
  const ExprNames names = names_of(i, e);
  const auto& [v, a, b, t, at, ty, f] = names;
  switch (e.op) {
    case ScalarOp::kVar: line(fmt::format("{} = add i64 {}, 0", v, var_value_.at(e.var))); break;
    case ScalarOp::kSym: {
      const std::string p = fresh("symp");
      line(fmt::format("{} = getelementptr i64, ptr %syms, i64 {}", p, e.var));
      if (t == ScalarType::Float) {  // a float held as a double, exactly (kernel_parameters.h)
        line(fmt::format("{}.d = load double, ptr {}", v, p));
        line(fmt::format("{} = fptrunc double {}.d to float", v, v));
      } else {
        line(fmt::format("{} = load {}, ptr {}", v, t == ScalarType::Double ? "double" : "i64", p));
      }
      break;
    }
    case ScalarOp::kConst:
      if (f) line(fmt::format("{} = fadd {} {}, -0.0", v, ty, float_literal(e.value, t)));
      else if (t == ScalarType::Bool) line(fmt::format("{} = or i1 {}, false", v, e.ivalue ? "true" : "false"));
      else line(fmt::format("{} = add {} {}, 0", v, ty, e.ivalue));
      break;
    case ScalarOp::kLoad: load(v, e); break;
    case ScalarOp::kStore: store(e); break;
    case ScalarOp::kCast: cast(v, name(e.a), at, t); break;
    case ScalarOp::kRoundTo:
      if (static_cast<ScalarType>(e.ivalue) == ScalarType::Half) {
        line(fmt::format("{}.h = fptrunc float {} to half", v, a));
        line(fmt::format("{} = fpext half {}.h to float", v, v));
      } else {
        const std::string bits16 = to_bfloat16(a);
        line(fmt::format("{}.w = zext i16 {} to i32", v, bits16));
        line(fmt::format("{}.s = shl i32 {}.w, 16", v, v));
        line(fmt::format("{} = bitcast i32 {}.s to float", v, v));
      }
      break;
    case ScalarOp::kWhere: line(fmt::format("{} = select i1 {}, {} {}, {} {}", v, a, ty, b, ty, name(e.c))); break;
    case ScalarOp::kFma: {
      const char* suffix = t == ScalarType::Float ? "f32" : "f64";
      declare(fmt::format("{} @llvm.fma.{}({}, {}, {})", ty, suffix, ty, ty, ty));
      line(fmt::format("{} = call {} @llvm.fma.{}({} {}, {} {}, {} {})", v, ty, suffix, ty, a, ty, b, ty, name(e.c)));
      break;
    }
    case ScalarOp::kCheck: check(v, a); break;
    case ScalarOp::kReduce: JITC_INTERNAL_ASSERT(false, "cpu codegen: reductions are emitted by reduction()"); break;
    default: return e.b >= 0 ? binary_expr(e, names) : unary_expr(e, names);
  }
}

void Printer::unary_expr(const Expr& e, const ExprNames& names) {
  const auto& [v, a, b, t, at, ty, f] = names;
  switch (e.op) {
    case ScalarOp::kNeg:
      if (f) line(fmt::format("{} = fneg {} {}", v, ty, a));
      else line(fmt::format("{} = sub {} 0, {}", v, ty, a));
      break;
    case ScalarOp::kAbs:
      if (f) line(fmt::format("{} = {}", v, intrinsic("fabs", t, a)));
      else if (is_unsigned(t)) line(fmt::format("{} = add {} {}, 0", v, ty, a));
      else {
        const std::string n = fresh("neg"), lt = fresh("lt");
        line(fmt::format("{} = sub {} 0, {}", n, ty, a));
        line(fmt::format("{} = icmp slt {} {}, 0", lt, ty, a));
        line(fmt::format("{} = select i1 {}, {} {}, {} {}", v, lt, ty, n, ty, a));
      }
      break;
    case ScalarOp::kExp:
      if (t == ScalarType::Float) exp_float(v, a);
      else line(fmt::format("{} = {}", v, intrinsic("exp", t, a)));
      break;
    case ScalarOp::kExp2: line(fmt::format("{} = {}", v, intrinsic("exp2", t, a))); break;
    case ScalarOp::kLog: line(fmt::format("{} = {}", v, intrinsic("log", t, a))); break;
    case ScalarOp::kLog2: line(fmt::format("{} = {}", v, intrinsic("log2", t, a))); break;
    case ScalarOp::kLog10: line(fmt::format("{} = {}", v, intrinsic("log10", t, a))); break;
    case ScalarOp::kSqrt: line(fmt::format("{} = {}", v, intrinsic("sqrt", t, a))); break;
    case ScalarOp::kSin:
    case ScalarOp::kCos:
      if (fast_trig_applies(e)) fast_trig(v, e);
      else if (t == ScalarType::Float) guarded_trig(v, e);
      else line(fmt::format("{} = {}", v, intrinsic(e.op == ScalarOp::kSin ? "sin" : "cos", t, a)));
      break;
    case ScalarOp::kFloor: line(fmt::format("{} = {}", v, intrinsic("floor", t, a))); break;
    case ScalarOp::kCeil: line(fmt::format("{} = {}", v, intrinsic("ceil", t, a))); break;
    case ScalarOp::kTrunc: line(fmt::format("{} = {}", v, intrinsic("trunc", t, a))); break;
    case ScalarOp::kRound: line(fmt::format("{} = {}", v, intrinsic("roundeven", t, a))); break;
    case ScalarOp::kRsqrt: {
      const std::string s = fresh("sqrt");
      line(fmt::format("{} = {}", s, intrinsic("sqrt", t, a)));
      line(fmt::format("{} = fdiv {} 1.0, {}", v, ty, s));
      break;
    }
    case ScalarOp::kExpm1: libm(v, "expm1", t, a); break;
    case ScalarOp::kLog1p: libm(v, "log1p", t, a); break;
    case ScalarOp::kTan: libm(v, "tan", t, a); break;
    case ScalarOp::kAsin: libm(v, "asin", t, a); break;
    case ScalarOp::kAcos: libm(v, "acos", t, a); break;
    case ScalarOp::kAtan: libm(v, "atan", t, a); break;
    case ScalarOp::kSinh: libm(v, "sinh", t, a); break;
    case ScalarOp::kCosh: libm(v, "cosh", t, a); break;
    case ScalarOp::kTanh: libm(v, "tanh", t, a); break;
    case ScalarOp::kAsinh: libm(v, "asinh", t, a); break;
    case ScalarOp::kAcosh: libm(v, "acosh", t, a); break;
    case ScalarOp::kAtanh: libm(v, "atanh", t, a); break;
    case ScalarOp::kErf:
      if (t == ScalarType::Float) erf_float(v, a);
      else libm(v, "erf", t, a);
      break;
    case ScalarOp::kErfc: libm(v, "erfc", t, a); break;
    case ScalarOp::kNot: line(fmt::format("{} = xor i1 {}, true", v, a)); break;
    case ScalarOp::kBitNot: line(fmt::format("{} = xor {} {}, -1", v, ty, a)); break;
    case ScalarOp::kIsNan: line(fmt::format("{} = fcmp uno {} {}, {}", v, compute_type(at), a, a)); break;
    case ScalarOp::kSign: sign(v, t, a); break;
    default: JITC_INTERNAL_ASSERT(false, "cpu codegen: not a unary op");
  }
}

void Printer::binary_expr(const Expr& e, const ExprNames& names) {
  const auto& [v, a, b, t, at, ty, f] = names;
  auto bin = [&](const char* fop, const char* iop) { line(fmt::format("{} = {} {} {}, {}", v, f ? fop : iop, ty, a, b)); };
  switch (e.op) {
    case ScalarOp::kAdd: bin("fadd", "add"); break;
    case ScalarOp::kSub: bin("fsub", "sub"); break;
    case ScalarOp::kMul: bin("fmul", "mul"); break;
    case ScalarOp::kDiv:
      if (f) bin("fdiv", "");
      else line(fmt::format("{} = {} {} {}, {}", v, is_unsigned(t) ? "udiv" : "sdiv", ty, a, safe_divisor(t, a, b)));
      break;
    case ScalarOp::kFloorDiv: floor_div(v, t, a, b); break;
    case ScalarOp::kRem: remainder(v, t, a, b); break;
    case ScalarOp::kFmod:  // frem is C's fmod, as ATen computes it; srem truncates as C's %
      if (f) bin("frem", "");
      else line(fmt::format("{} = {} {} {}, {}", v, is_unsigned(t) ? "urem" : "srem", ty, a, safe_divisor(t, a, b)));
      break;
    case ScalarOp::kPow:
      if (f) {
        line(fmt::format("{} = {}", v, call(fmt::format("pow{}", libm_suffix(t)), t, a, b)));
      } else {
        int_pow(v, t, a, b);
      }
      break;
    case ScalarOp::kAtan2: line(fmt::format("{} = {}", v, call(fmt::format("atan2{}", libm_suffix(t)), t, a, b))); break;
    case ScalarOp::kMax:
    case ScalarOp::kMin: extremum(v, t, a, b, e.op == ScalarOp::kMax); break;
    case ScalarOp::kAnd: line(fmt::format("{} = and {} {}, {}", v, ty, a, b)); break;
    case ScalarOp::kOr: line(fmt::format("{} = or {} {}, {}", v, ty, a, b)); break;
    case ScalarOp::kXor: line(fmt::format("{} = xor {} {}, {}", v, ty, a, b)); break;
    case ScalarOp::kShl: line(fmt::format("{} = shl {} {}, {}", v, ty, a, b)); break;
    case ScalarOp::kShr: line(fmt::format("{} = {} {} {}, {}", v, is_unsigned(t) ? "lshr" : "ashr", ty, a, b)); break;
    case ScalarOp::kEq: compare(v, at, a, b, "oeq", "eq", "eq"); break;
    case ScalarOp::kNe: compare(v, at, a, b, "une", "ne", "ne"); break;
    case ScalarOp::kLt: compare(v, at, a, b, "olt", "slt", "ult"); break;
    case ScalarOp::kLe: compare(v, at, a, b, "ole", "sle", "ule"); break;
    case ScalarOp::kGt: compare(v, at, a, b, "ogt", "sgt", "ugt"); break;
    case ScalarOp::kGe: compare(v, at, a, b, "oge", "sge", "uge"); break;
    default: JITC_INTERNAL_ASSERT(false, "cpu codegen: not a binary op");
  }
}

std::string Printer::address(const Expr& e) {
  const std::string p = fresh("p");
  line(fmt::format("{} = getelementptr {}, ptr %buf{}, i64 {}", p, storage_type(k_.buffers[e.buffer].dtype), e.buffer, name(e.a)));
  return p;
}

void Printer::load(const std::string& v, const Expr& e) {
  const ScalarType dtype = k_.buffers[e.buffer].dtype;
  const std::string p = address(e);
  if (compute_type_of(dtype) == dtype && dtype != ScalarType::Bool) {
    line(fmt::format("{} = load {}, ptr {}", v, storage_type(dtype), p));
    return;
  }
  const std::string raw = fresh("raw");
  line(fmt::format("{} = load {}, ptr {}", raw, storage_type(dtype), p));
  switch (dtype) {
    case ScalarType::Half: line(fmt::format("{} = fpext half {} to float", v, raw)); break;
    case ScalarType::BFloat16: {
      const std::string wide = fresh("w"), shifted = fresh("s");
      line(fmt::format("{} = zext i16 {} to i32", wide, raw));
      line(fmt::format("{} = shl i32 {}, 16", shifted, wide));
      line(fmt::format("{} = bitcast i32 {} to float", v, shifted));
      break;
    }
    default: line(fmt::format("{} = icmp ne i8 {}, 0", v, raw)); break;  // bool
  }
}

void Printer::store(const Expr& e) {
  const ScalarType dtype = k_.buffers[e.buffer].dtype;
  const std::string value = name(e.b);
  std::string raw = value;
  switch (dtype) {
    case ScalarType::Half:
      raw = fresh("h");
      line(fmt::format("{} = fptrunc float {} to half", raw, value));
      break;
    case ScalarType::BFloat16: raw = to_bfloat16(value); break;
    case ScalarType::Bool:
      raw = fresh("b");
      line(fmt::format("{} = zext i1 {} to i8", raw, value));
      break;
    default: break;
  }
  std::string to = stage_address(e);
  if (to.empty()) to = address(e);
  line(fmt::format("store {} {}, ptr {}", storage_type(dtype), raw, to));
}

}  // namespace jitc::inductor::llvm_ir
