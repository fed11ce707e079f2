#include "inductor/cpu/llvm_emitter.h"

#include "inductor/cpu/vector_math.h"

#include <jitc/detail/internal_assert.h>

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <limits>
#include <tuple>

namespace jitc::inductor::llvm_ir {

using c10::ScalarType;

bool is_float(ScalarType t) { return t == ScalarType::Float || t == ScalarType::Double; }
bool is_unsigned(ScalarType t) { return t == ScalarType::Byte || t == ScalarType::Bool; }

const char* compute_type(ScalarType t) {
  switch (t) {
    case ScalarType::Float: return "float";
    case ScalarType::Double: return "double";
    case ScalarType::Long: return "i64";
    case ScalarType::Int: return "i32";
    case ScalarType::Short: return "i16";
    case ScalarType::Char:
    case ScalarType::Byte: return "i8";
    case ScalarType::Bool: return "i1";
    default: JITC_INTERNAL_UNREACHABLE(fmt::format("cpu codegen: no compute type for {}", c10::toString(t)));
  }
}

const char* storage_type(ScalarType t) {
  switch (t) {
    case ScalarType::Half: return "half";
    case ScalarType::BFloat16: return "i16";
    case ScalarType::Bool: return "i8";
    default: return compute_type(t);
  }
}

int bits(ScalarType t) {
  switch (t) {
    case ScalarType::Double:
    case ScalarType::Long: return 64;
    case ScalarType::Float:
    case ScalarType::Int: return 32;
    case ScalarType::Short: return 16;
    case ScalarType::Bool: return 1;
    default: return 8;
  }
}

std::string float_literal(double v, ScalarType t) {  // LLVM wants the hex of the double value
  const double exact = t == ScalarType::Float ? static_cast<double>(static_cast<float>(v)) : v;
  return fmt::format("0x{:016X}", std::bit_cast<uint64_t>(exact));
}

const char* libm_suffix(ScalarType t) { return t == ScalarType::Float ? "f" : ""; }

std::string Emitter::fresh(const std::string& stem) { return fmt::format("%{}.{}", stem, counter_++); }

void Emitter::metadata(const std::string& definition) {
  if (declared_.emplace(definition, true).second) declarations_ += definition + "\n";
}

std::string Emitter::declare(const std::string& decl) {
  if (declared_.emplace(decl, true).second) declarations_ += "declare " + decl + "\n";
  return decl;
}

// libm functions with vector variants are called through jitc's wrappers (cpu/vector_math.h). No side
// effects (errno is not read by anyone): what lets loops calling them vectorize.
std::string Emitter::call(const std::string& fn, ScalarType t, const std::string& arg) {
  const char* ty = compute_type(t);
  const std::string callee = cpu::vector_math_callee(fn);
  declare(fmt::format("{} @{}({}){}", ty, callee, ty, callee.rfind("llvm.", 0) == 0 ? "" : " nounwind willreturn memory(none)"));
  return fmt::format("call {} @{}({} {})", ty, callee, ty, arg);
}

std::string Emitter::call(const std::string& fn, ScalarType t, const std::string& a, const std::string& b) {
  const char* ty = compute_type(t);
  const std::string callee = cpu::vector_math_callee(fn);
  declare(fmt::format("{} @{}({}, {}){}", ty, callee, ty, ty, callee.rfind("llvm.", 0) == 0 ? "" : " nounwind willreturn memory(none)"));
  return fmt::format("call {} @{}({} {}, {} {})", ty, callee, ty, a, ty, b);
}

std::string Emitter::intrinsic(const char* stem, ScalarType t, const std::string& arg) {
  return call(fmt::format("llvm.{}.{}", stem, t == ScalarType::Float ? "f32" : "f64"), t, arg);
}

// Round to nearest even, NaN to a quiet NaN: c10::BFloat16's conversion.
std::string Emitter::to_bfloat16(const std::string& value) {
  const std::string bits32 = fresh("fb"), lsb = fresh("lsb"), bias = fresh("bias"), sum = fresh("sum"), high = fresh("hi"),
                    nan = fresh("nan"), pick = fresh("pick"), out = fresh("bf");
  line(fmt::format("{} = bitcast float {} to i32", bits32, value));
  line(fmt::format("{}.sh = lshr i32 {}, 16", lsb, bits32));
  line(fmt::format("{} = and i32 {}.sh, 1", lsb, lsb));
  line(fmt::format("{} = add i32 {}, 32767", bias, lsb));
  line(fmt::format("{} = add i32 {}, {}", sum, bits32, bias));
  line(fmt::format("{} = lshr i32 {}, 16", high, sum));
  line(fmt::format("{} = fcmp uno float {}, {}", nan, value, value));
  line(fmt::format("{} = select i1 {}, i32 32704, i32 {}", pick, nan, high));
  line(fmt::format("{} = trunc i32 {} to i16", out, pick));
  return out;
}

void Emitter::cast(const std::string& v, const std::string& a, ScalarType from, ScalarType to) {
  const char* fty = compute_type(from);
  const char* tty = compute_type(to);
  if (from == to) {
    line(fmt::format("{} = {} {} {}, {}", v,
                     is_float(to)             ? "fadd"
                     : to == ScalarType::Bool ? "or"
                                              : "add",
                     tty, a,
                     is_float(to)             ? "-0.0"
                     : to == ScalarType::Bool ? "false"
                                              : "0"));  // x + -0.0 is x, -0.0 included
  } else if (to == ScalarType::Bool) {
    line(fmt::format("{} = {} {} {}, {}", v, is_float(from) ? "fcmp une" : "icmp ne", fty, a, is_float(from) ? "0.0" : "0"));
  } else if (is_float(from) && is_float(to)) {
    line(fmt::format("{} = {} {} {} to {}", v, bits(to) > bits(from) ? "fpext" : "fptrunc", fty, a, tty));
  } else if (is_float(from)) {
    // ATen's CPU conversion (c10::convert on x86-64): int64 and int32 take the truncated value, or the
    // type's minimum for NaN, infinities and values out of its range (cvttsd2si's "integer indefinite");
    // int16 and int8 convert through int32, uint8 through int64 (c10's static_cast_with_inter_type), and
    // keep the low bits: int8(300.0) is 44, uint8(-1.0) is 255, int16(1e10) is 0. LLVM's fptosi/fptoui
    // of such values is poison, so the conversion itself only sees values in range.
    const int wide = to == ScalarType::Long || to == ScalarType::Byte ? 64 : 32;
    const double limit = std::ldexp(1.0, wide - 1);
    const std::string ok = fresh("cvt.ok"), lo = fresh("cvt.lo"), hi = fresh("cvt.hi"), in = fresh("cvt.in"), raw = fresh("cvt.raw");
    const std::string wide_ty = fmt::format("i{}", wide);
    line(fmt::format("{} = fcmp oge {} {}, {}", lo, fty, a, float_literal(-limit, from)));
    line(fmt::format("{} = fcmp olt {} {}, {}", hi, fty, a, float_literal(limit, from)));
    line(fmt::format("{} = and i1 {}, {}", ok, lo, hi));
    line(fmt::format("{} = select i1 {}, {} {}, {} 0.0", in, ok, fty, a, fty));
    line(fmt::format("{} = fptosi {} {} to {}", raw, fty, in, wide_ty));
    const std::string converted = bits(to) == wide ? v : fresh("cvt.w");
    line(fmt::format("{} = select i1 {}, {} {}, {} {}", converted, ok, wide_ty, raw, wide_ty,
                     wide == 64 ? "-9223372036854775808" : "-2147483648"));
    if (converted != v) line(fmt::format("{} = trunc {} {} to {}", v, wide_ty, converted, tty));
  } else if (is_float(to)) {
    line(fmt::format("{} = {} {} {} to {}", v, is_unsigned(from) ? "uitofp" : "sitofp", fty, a, tty));
  } else if (bits(to) > bits(from)) {
    line(fmt::format("{} = {} {} {} to {}", v, is_unsigned(from) ? "zext" : "sext", fty, a, tty));
  } else if (bits(to) < bits(from)) {
    line(fmt::format("{} = trunc {} {} to {}", v, fty, a, tty));
  } else {
    line(fmt::format("{} = add {} {}, 0", v, tty, a));  // int8 <-> uint8: the same bits
  }
}

// exp for float in plain arithmetic, so that loops calling it vectorize (a libm call does not: LLVM 16
// does not vectorize calls to libmvec here). The argument is clamped to [-104, 89] (past either end expf
// is 0 or infinity; a NaN passes the clamps and the arithmetic), n = round(x log2 e) by adding and
// subtracting 1.5 * 2^23 (whose bits then hold n: no conversion, defined for NaN), Cody-Waite reduction
// x = n ln2 + r, |r| <= ln2/2, through FMAs, a degree-7 polynomial for e^r (truncation error < 1e-8), and
// 2^n applied in two halves so that results down to the denormals and up to the overflow are exact
// powers. Within 2 ulp of expf; NaN and infinities as expf. (The clamps compile to min/max, where tests
// and selects of the special cases took six instructions per vector.)
void Emitter::exp_float(const std::string& v, const std::string& a) {
  auto f = [&](double x) { return float_literal(x, ScalarType::Float); };
  const std::string p = v + ".x";
  declare("float @llvm.fma.f32(float, float, float)");
  line(fmt::format("{}.lo = fcmp olt float {}, {}", p, a, f(-104.0)));
  line(fmt::format("{}.c0 = select i1 {}.lo, float {}, float {}", p, p, f(-104.0), a));
  line(fmt::format("{}.hi = fcmp ogt float {}.c0, {}", p, p, f(89.0)));
  line(fmt::format("{}.c = select i1 {}.hi, float {}, float {}.c0", p, p, f(89.0), p));
  line(fmt::format("{}.t = fmul float {}.c, {}", p, p, f(1.4426950408889634)));
  line(fmt::format("{}.tm = fadd float {}.t, {}", p, p, f(12582912.0)));  // 1.5 * 2^23
  line(fmt::format("{}.n = fsub float {}.tm, {}", p, p, f(12582912.0)));
  line(fmt::format("{}.r0 = call float @llvm.fma.f32(float {}.n, float {}, float {}.c)", p, p, f(-0.693145751953125), p));
  line(fmt::format("{}.r = call float @llvm.fma.f32(float {}.n, float {}, float {}.r0)", p, p, f(-1.428606765330187e-06), p));
  const double c[] = {1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0};
  std::string acc = f(c[0]);
  for (int i = 1; i < 8; ++i) {
    line(fmt::format("{}.m{} = fmul contract float {}, {}.r", p, i, acc, p));
    line(fmt::format("{}.a{} = fadd contract float {}.m{}, {}", p, i, p, i, f(c[i])));
    acc = fmt::format("{}.a{}", p, i);
  }
  line(fmt::format("{}.bits = bitcast float {}.tm to i32", p, p));
  line(fmt::format("{}.ni = sub i32 {}.bits, 1262485504", p, p));  // the bits of 1.5 * 2^23
  line(fmt::format("{}.n1 = ashr i32 {}.ni, 1", p, p));
  line(fmt::format("{}.n2 = sub i32 {}.ni, {}.n1", p, p, p));
  for (const char* half : {"1", "2"}) {
    line(fmt::format("{}.b{} = add i32 {}.n{}, 127", p, half, p, half));
    line(fmt::format("{}.e{} = shl i32 {}.b{}, 23", p, half, p, half));
    line(fmt::format("{}.s{} = bitcast i32 {}.e{} to float", p, half, p, half));
  }
  line(fmt::format("{}.v1 = fmul float {}, {}.s1", p, acc, p));
  line(fmt::format("{} = fmul float {}.v1, {}.s2", v, p, p));
}

// erf for float: a rational function of x on [-4, 4] (erf is +-1 in float beyond), erf(x) = x P(x^2) /
// Q(x^2) with the coefficients of Eigen's and XLA's float erf. Against erf in double over every 97th
// float: absolute error 3.3e-7 (A&S 7.1.26 with exp, which ATen's vectorized kernel uses and this printer
// used before: 6.2e-7) and no cancellation near 0. About 15 vector instructions instead of 45 (A&S needs
// an exp besides its division): bias + GELU was bound by erf's arithmetic on the 2-core machine.
// P / Q is taken before the product with x, so that subnormal x keep their bits; the clamp is written
// as ordered compares so that NaN passes through.
void Emitter::erf_float(const std::string& v, const std::string& a) {
  auto f = [&](double x) { return float_literal(x, ScalarType::Float); };
  const std::string p = v + ".r";
  line(fmt::format("{}.hi = fcmp ogt float {}, 4.0", p, a));
  line(fmt::format("{}.c0 = select i1 {}.hi, float 4.0, float {}", p, p, a));
  line(fmt::format("{}.lo = fcmp olt float {}.c0, -4.0", p, p));
  line(fmt::format("{}.x = select i1 {}.lo, float -4.0, float {}.c0", p, p, p));
  line(fmt::format("{}.x2 = fmul float {}.x, {}.x", p, p, p));
  // Horner's rule in x^2, highest coefficient first, with fused multiply-adds.
  auto horner = [&](const char* stem, std::initializer_list<double> coefficients) {
    std::string acc;
    int i = 0;
    for (double c : coefficients) {
      if (acc.empty()) {
        acc = f(c);
        continue;
      }
      const std::string next = fmt::format("{}.{}{}", p, stem, i++);
      line(fmt::format("{} = call float @llvm.fma.f32(float {}.x2, float {}, float {})", next, p, acc, f(c)));
      acc = next;
    }
    return acc;
  };
  declare("float @llvm.fma.f32(float, float, float)");
  const std::string num = horner("p", {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
                                       -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02});
  const std::string den =
      horner("q", {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03, -1.42647390514189e-02});
  line(fmt::format("{}.ratio = fdiv float {}, {}", p, num, den));
  line(fmt::format("{} = fmul float {}.ratio, {}.x", v, p, p));
}

// sin and cos of a float in plain arithmetic, both from one reduction (libmvec reduces x once per call,
// and the pointwise chain (sin+cos).relu ran well below a copy's speed on the 2-core machine;
// benchmarks/RESULTS.md, Fused CPU kernels, session 10): j =
// rint(x 2/pi), r = x - j pi/2 through three FMAs with pi/2 split into three floats (exact enough while
// |j| < 2^16), Cephes' polynomials for sin and cos on [-pi/4, pi/4], then j mod 4 picks and negates them.
// Beyond |x| < 65536 the reduction would lose bits: `ok` is false there and for NaN and infinities (an
// ordered compare), which compute on 0 instead, and the code generator redoes such a tile through libm.
Emitter::SinCos Emitter::sincos_float(const std::string& stem, const std::string& a) {
  auto f = [&](double x) { return float_literal(x, ScalarType::Float); };
  auto fma = [&](const std::string& v, const std::string& x, const std::string& y, const std::string& z) {
    line(fmt::format("{} = call float @llvm.fma.f32(float {}, float {}, float {})", v, x, y, z));
  };
  const std::string p = stem;
  declare("float @llvm.fma.f32(float, float, float)");
  declare("float @llvm.fabs.f32(float)");
  declare("float @llvm.rint.f32(float)");
  line(fmt::format("{}.ax = call float @llvm.fabs.f32(float {})", p, a));
  line(fmt::format("{}.ok = fcmp olt float {}.ax, 65536.0", p, p));
  line(fmt::format("{}.x = select i1 {}.ok, float {}, float 0.0", p, p, a));
  line(fmt::format("{}.t = fmul float {}.x, {}", p, p, f(0.6366197466850281)));  // 2/pi
  line(fmt::format("{}.j = call float @llvm.rint.f32(float {}.t)", p, p));
  fma(p + ".r1", p + ".j", f(-1.5707963705062866), p + ".x");
  fma(p + ".r2", p + ".j", f(4.371138828673793e-08), p + ".r1");
  fma(p + ".r", p + ".j", f(1.7151245100058819e-15), p + ".r2");
  line(fmt::format("{}.z = fmul float {}.r, {}.r", p, p, p));
  // sin r = r + r^3 (s1 + z (s2 + z s3)), cos r = 1 - z/2 + z^2 (c1 + z (c2 + z c3)), z = r^2
  fma(p + ".s3", p + ".z", f(-1.9515295891e-4), f(8.3321608736e-3));
  fma(p + ".s2", p + ".z", p + ".s3", f(-1.6666654611e-1));
  line(fmt::format("{}.rz = fmul float {}.r, {}.z", p, p, p));
  fma(p + ".sr", p + ".rz", p + ".s2", p + ".r");
  fma(p + ".c3", p + ".z", f(2.443315711809948e-5), f(-1.388731625493765e-3));
  fma(p + ".c2", p + ".z", p + ".c3", f(4.166664568298827e-2));
  line(fmt::format("{}.zz = fmul float {}.z, {}.z", p, p, p));
  fma(p + ".half", p + ".z", f(-0.5), f(1.0));
  fma(p + ".cr", p + ".zz", p + ".c2", p + ".half");
  // x = j pi/2 + r: sin x is sin r, cos r, -sin r, -cos r for j mod 4 = 0..3; cos x is cos r, -sin r,
  // -cos r, sin r. Negation flips the sign bit: (j & 2) << 30, and ((j + 1) & 2) << 30 for cos.
  line(fmt::format("{}.q = fptosi float {}.j to i32", p, p));
  line(fmt::format("{}.odd = trunc i32 {}.q to i1", p, p));
  line(fmt::format("{}.sb = select i1 {}.odd, float {}.cr, float {}.sr", p, p, p, p));
  line(fmt::format("{}.cb = select i1 {}.odd, float {}.sr, float {}.cr", p, p, p, p));
  line(fmt::format("{}.q1 = add i32 {}.q, 1", p, p));
  for (const auto& [out, base, quadrant] : {std::tuple{"sin", ".sb", ".q"}, std::tuple{"cos", ".cb", ".q1"}}) {
    line(fmt::format("{}.{}.m = and i32 {}{}, 2", p, out, p, quadrant));
    line(fmt::format("{}.{}.flip = shl i32 {}.{}.m, 30", p, out, p, out));
    line(fmt::format("{}.{}.bits = bitcast float {}{} to i32", p, out, p, base));
    line(fmt::format("{}.{}.signed = xor i32 {}.{}.bits, {}.{}.flip", p, out, p, out, p, out));
    line(fmt::format("{}.{}.v = bitcast i32 {}.{}.signed to float", p, out, p, out));
  }
  // sin(-0) is -0: the reduction's fma(-0, -pi/2, -0) is +0
  line(fmt::format("{}.zero = fcmp oeq float {}.ax, 0.0", p, p));
  line(fmt::format("{}.sin = select i1 {}.zero, float {}, float {}.sin.v", p, p, a, p));
  return {p + ".sin", p + ".cos.v", p + ".ok"};
}

void Emitter::libm(const std::string& v, const char* stem, ScalarType t, const std::string& a) {
  line(fmt::format("{} = {}", v, call(fmt::format("{}{}", stem, libm_suffix(t)), t, a)));
}

void Emitter::compare(const std::string& v, ScalarType t, const std::string& a, const std::string& b, const char* fcmp, const char* scmp,
                      const char* ucmp) {
  if (is_float(t)) line(fmt::format("{} = fcmp {} {} {}, {}", v, fcmp, compute_type(t), a, b));
  else line(fmt::format("{} = icmp {} {} {}, {}", v, is_unsigned(t) ? ucmp : scmp, compute_type(t), a, b));
}

void Emitter::extremum(const std::string& v, ScalarType t, const std::string& a, const std::string& b, bool max) {
  const char* ty = compute_type(t);
  if (!is_float(t)) {
    const char* cmp = max ? (is_unsigned(t) ? "ugt" : "sgt") : (is_unsigned(t) ? "ult" : "slt");
    line(fmt::format("{}.c = icmp {} {} {}, {}", v, cmp, ty, a, b));
    line(fmt::format("{} = select i1 {}.c, {} {}, {} {}", v, v, ty, a, ty, b));
    return;
  }
  // llvm.maximum would propagate NaN too, but LLVM 16's x86 back end cannot select it.
  line(fmt::format("{}.c = fcmp {} {} {}, {}", v, max ? "ogt" : "olt", ty, a, b));
  line(fmt::format("{}.s = select i1 {}.c, {} {}, {} {}", v, v, ty, a, ty, b));
  line(fmt::format("{}.u = fcmp uno {} {}, {}", v, ty, a, b));
  line(fmt::format("{}.n = fadd {} {}, {}", v, ty, a, b));  // NaN when either is
  line(fmt::format("{} = select i1 {}.u, {} {}.n, {} {}.s", v, v, ty, v, ty, v));
}

void Emitter::sign(const std::string& v, ScalarType t, const std::string& a) {
  const char* ty = compute_type(t);
  const std::string pos = fresh("pos"), neg = fresh("neg"), p = fresh("p"), n = fresh("n");
  if (is_float(t)) {
    line(fmt::format("{} = fcmp ogt {} {}, 0.0", pos, ty, a));
    line(fmt::format("{} = fcmp olt {} {}, 0.0", neg, ty, a));
    line(fmt::format("{} = uitofp i1 {} to {}", p, pos, ty));
    line(fmt::format("{} = uitofp i1 {} to {}", n, neg, ty));
    line(fmt::format("{} = fsub {} {}, {}", v, ty, p, n));
  } else {
    line(fmt::format("{} = icmp {} {} {}, 0", pos, is_unsigned(t) ? "ugt" : "sgt", ty, a));
    // uint8 is never negative (its values past 127 are not either)
    if (is_unsigned(t)) line(fmt::format("{} = or i1 false, false", neg));
    else line(fmt::format("{} = icmp slt {} {}, 0", neg, ty, a));
    line(fmt::format("{} = zext i1 {} to {}", p, pos, ty));
    line(fmt::format("{} = zext i1 {} to {}", n, neg, ty));
    line(fmt::format("{} = sub {} {}, {}", v, ty, p, n));
  }
}

// Integer division by zero would trap the process (eager raises an error instead): a zero divisor
// divides by one here. So would the signed minimum divided by -1 (x86's idiv traps on the overflow; in
// LLVM it is undefined): it divides by one too, which gives what ATen's CPU kernels give there (the
// wrapped quotient, the minimum itself, for div and floor division; 0 for remainder and fmod).
std::string Emitter::safe_divisor(ScalarType t, const std::string& a, const std::string& b) {
  const char* ty = compute_type(t);
  const std::string zero = fresh("z"), out = fresh("d");
  line(fmt::format("{} = icmp eq {} {}, 0", zero, ty, b));
  std::string one = zero;
  if (!is_unsigned(t)) {
    const std::string minus_one = fresh("m1"), minimum = fresh("min"), overflow = fresh("ovf");
    one = fresh("one");
    line(fmt::format("{} = icmp eq {} {}, -1", minus_one, ty, b));
    line(fmt::format("{} = icmp eq {} {}, {}", minimum, ty, a, std::numeric_limits<int64_t>::min() >> (64 - bits(t))));
    line(fmt::format("{} = and i1 {}, {}", overflow, minus_one, minimum));
    line(fmt::format("{} = or i1 {}, {}", one, zero, overflow));
  }
  line(fmt::format("{} = select i1 {}, {} 1, {} {}", out, one, ty, ty, b));
  return out;
}

// Python's floor division: ATen's div_floor (floats: floor of the true quotient, with its fix-ups).
void Emitter::floor_div(const std::string& v, ScalarType t, const std::string& a, const std::string& b) {
  const char* ty = compute_type(t);
  if (is_float(t)) {
    const std::string q = fresh("q");
    line(fmt::format("{} = fdiv {} {}, {}", q, ty, a, b));
    line(fmt::format("{} = {}", v, intrinsic("floor", t, q)));
    return;
  }
  if (is_unsigned(t)) {  // uint8: no negative quotient to round down
    line(fmt::format("{} = udiv {} {}, {}", v, ty, a, safe_divisor(t, a, b)));
    return;
  }
  const std::string d = safe_divisor(t, a, b), q = fresh("q"), r = fresh("r"), nz = fresh("nz"), sa = fresh("sa"), sb = fresh("sb"),
                    diff = fresh("diff"), fix = fresh("fix"), one = fresh("one");
  line(fmt::format("{} = sdiv {} {}, {}", q, ty, a, d));
  line(fmt::format("{} = srem {} {}, {}", r, ty, a, d));
  line(fmt::format("{} = icmp ne {} {}, 0", nz, ty, r));
  line(fmt::format("{} = icmp slt {} {}, 0", sa, ty, r));
  line(fmt::format("{} = icmp slt {} {}, 0", sb, ty, d));
  line(fmt::format("{} = xor i1 {}, {}", diff, sa, sb));
  line(fmt::format("{} = and i1 {}, {}", fix, nz, diff));
  line(fmt::format("{} = zext i1 {} to {}", one, fix, ty));
  line(fmt::format("{} = sub {} {}, {}", v, ty, q, one));
}

// Python's remainder: the result takes the divisor's sign.
void Emitter::remainder(const std::string& v, ScalarType t, const std::string& a, const std::string& b) {
  const char* ty = compute_type(t);
  if (is_unsigned(t)) {  // uint8: both signs are positive
    line(fmt::format("{} = urem {} {}, {}", v, ty, a, safe_divisor(t, a, b)));
    return;
  }
  const std::string d = is_float(t) ? b : safe_divisor(t, a, b);
  const std::string r = fresh("r"), nz = fresh("nz"), sr = fresh("sr"), sb = fresh("sb"), diff = fresh("diff"), fix = fresh("fix"),
                    adj = fresh("adj");
  const bool f = is_float(t);
  line(fmt::format("{} = {} {} {}, {}", r, f ? "frem" : "srem", ty, a, d));
  line(fmt::format("{} = {} {} {}, {}", nz, f ? "fcmp une" : "icmp ne", ty, r, f ? "0.0" : "0"));
  line(fmt::format("{} = {} {} {}, {}", sr, f ? "fcmp olt" : "icmp slt", ty, r, f ? "0.0" : "0"));
  line(fmt::format("{} = {} {} {}, {}", sb, f ? "fcmp olt" : "icmp slt", ty, d, f ? "0.0" : "0"));
  line(fmt::format("{} = xor i1 {}, {}", diff, sr, sb));
  line(fmt::format("{} = and i1 {}, {}", fix, nz, diff));
  line(fmt::format("{} = {} {} {}, {}", adj, f ? "fadd" : "add", ty, r, d));
  line(fmt::format("{} = select i1 {}, {} {}, {} {}", v, fix, ty, adj, ty, r));
}

// Integer power by repeated squaring, unrolled over the exponent's bits.
void Emitter::int_pow(const std::string& v, ScalarType t, const std::string& a, const std::string& b) {
  const char* ty = compute_type(t);
  std::string result = fresh("pw"), base = a, exponent = b;
  line(fmt::format("{} = add {} 1, 0", result, ty));
  const bool unsigned_type = is_unsigned(t);  // every bit of a uint8 exponent counts, and none makes it negative
  for (int bit = 0; bit < bits(t) - (unsigned_type ? 0 : 1) && bit < 63; ++bit) {
    const std::string low = fresh("lo"), set = fresh("set"), mul = fresh("m"), next = fresh("pw"), sq = fresh("sq"), sh = fresh("sh");
    line(fmt::format("{} = and {} {}, 1", low, ty, exponent));
    line(fmt::format("{} = icmp ne {} {}, 0", set, ty, low));
    line(fmt::format("{} = mul {} {}, {}", mul, ty, result, base));
    line(fmt::format("{} = select i1 {}, {} {}, {} {}", next, set, ty, mul, ty, result));
    line(fmt::format("{} = mul {} {}, {}", sq, ty, base, base));
    line(fmt::format("{} = lshr {} {}, 1", sh, ty, exponent));
    result = next, base = sq, exponent = sh;
  }
  if (unsigned_type) {
    line(fmt::format("{} = add {} {}, 0", v, ty, result));
    return;
  }
  // A negative exponent: 1 for base 1, +-1 for base -1 (by the exponent's parity), else 0 (ATen's powi).
  const std::string negative = fresh("negexp"), one = fresh("one"), minus = fresh("minus"), odd = fresh("odd"), signed_one = fresh("sone"),
                    small = fresh("small"), picked = fresh("picked");
  line(fmt::format("{} = icmp slt {} {}, 0", negative, ty, b));
  line(fmt::format("{} = icmp eq {} {}, 1", one, ty, a));
  line(fmt::format("{} = icmp eq {} {}, -1", minus, ty, a));
  line(fmt::format("{}.b = and {} {}, 1", odd, ty, b));
  line(fmt::format("{} = icmp ne {} {}.b, 0", odd, ty, odd));
  line(fmt::format("{} = select i1 {}, {} -1, {} 1", signed_one, odd, ty, ty));
  line(fmt::format("{} = select i1 {}, {} 1, {} 0", small, one, ty, ty));
  line(fmt::format("{} = select i1 {}, {} {}, {} {}", picked, minus, ty, signed_one, ty, small));
  line(fmt::format("{} = select i1 {}, {} {}, {} {}", v, negative, ty, picked, ty, result));
}

}  // namespace jitc::inductor::llvm_ir
