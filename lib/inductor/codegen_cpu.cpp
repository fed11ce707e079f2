// Kernel IR -> LLVM IR text. Loop counters and reduction accumulators live in allocas (as clang emits
// them); O3's mem2reg turns them into SSA, after which the inner loops vectorize. Each kernel gives:
//   void  @<name>(ptr buffers, ptr symbols, i64 tile_begin, i64 tile_end)
//   i64   @<name>.tiles(ptr symbols)       the number of tiles (rows, or row x column tiles)
// The body is a private function taking each buffer as a `noalias` pointer: outputs are fresh
// allocations, so no store can alias a load, and the vectorizer needs no runtime alias checks.
#include "inductor/codegen_cpu.h"

#include "inductor/kernel_builder.h"
#include "inductor/llvm_emitter.h"
#include "inductor/placement.h"

#include <fmt/format.h>

#include <bit>
#include <stdexcept>
#include <unordered_map>

namespace jitc::inductor {

namespace {
using namespace llvm_ir;

class Printer : private Emitter {
 public:
  explicit Printer(const Kernel& k) : k_(k), emitted_(k.body.size()) {}

  std::string run() {
    classify();
    std::string body = body_function();
    return declarations_ + body + wrapper() + tiles_function();
  }

 private:
  void classify() {
    Placement p = place(k_);
    scope_ = std::move(p.scope);
    loop_of_ = std::move(p.loop);
  }

  // ---- text helpers -----------------------------------------------------------------------------
  std::string name(int e) const { return fmt::format("%e{}", e); }

  // ---- functions --------------------------------------------------------------------------------
  std::string body_function() {
    std::string params;
    for (size_t b = 0; b < k_.buffers.size(); ++b) params += fmt::format("ptr noalias %buf{}, ", b);
    out_ += fmt::format("define internal void @{}.body({}ptr %syms, i64 %tile_begin, i64 %tile_end) alwaysinline \"prefer-vector-width\"=\"512\" {{\n",
                        k_.name, params);
    label("entry");
    for (size_t i = 0; i < k_.body.size(); ++i)
      if (scope_[i] == Scope::kEntry) emit(static_cast<int>(i));
    tiles_per_row_ = tiles_per_row();
    line("%tile = alloca i64");
    line("store i64 %tile_begin, ptr %tile");
    line("br label %tile.head");
    label("tile.head");
    line("%t = load i64, ptr %tile");
    line("%t.more = icmp slt i64 %t, %tile_end");
    line("br i1 %t.more, label %tile.body, label %exit");
    label("tile.body");
    row();
    line("%t.next = add nsw i64 %t, 1");
    line("store i64 %t.next, ptr %tile");
    line("br label %tile.head");
    label("exit");
    line("ret void");
    out_ += "}\n";
    return std::exchange(out_, "");
  }

  std::string wrapper() {
    std::string s = fmt::format("define void @{}(ptr %buffers, ptr %syms, i64 %tile_begin, i64 %tile_end) \"prefer-vector-width\"=\"512\" {{\nentry:\n", k_.name);
    std::string args;
    for (size_t b = 0; b < k_.buffers.size(); ++b) {
      s += fmt::format("  %slot{} = getelementptr ptr, ptr %buffers, i64 {}\n  %buf{} = load ptr, ptr %slot{}\n", b, b, b, b);
      args += fmt::format("ptr %buf{}, ", b);
    }
    s += fmt::format("  call void @{}.body({}ptr %syms, i64 %tile_begin, i64 %tile_end)\n  ret void\n}}\n", k_.name, args);
    return s;
  }

  std::string tiles_function() {
    out_.clear();
    std::fill(emitted_.begin(), emitted_.end(), false);
    out_ += fmt::format("define i64 @{}.tiles(ptr %syms) {{\n", k_.name);
    label("entry");
    std::string rows = "1";
    for (int v : k_.outer_vars()) {
      const std::string extent = emit(k_.vars[v].extent);
      const std::string product = fresh("rows");
      line(fmt::format("{} = mul i64 {}, {}", product, rows, extent));
      rows = product;
    }
    const std::string per_row = tiles_per_row();
    const std::string total = fresh("tiles");
    line(fmt::format("{} = mul i64 {}, {}", total, rows, per_row));
    line(fmt::format("ret i64 {}", total));
    out_ += "}\n";
    return std::exchange(out_, "");
  }

  // Tiles per row: 1, or ceil(inner extent / tile) for a tiled pointwise kernel.
  std::string tiles_per_row() {
    if (k_.tile == 0) return "1";
    const auto inner = k_.inner_vars();
    if (inner.size() != 1) throw std::invalid_argument("cpu codegen: a tiled kernel needs exactly one inner dim");
    const std::string extent = emit(k_.vars[inner[0]].extent);
    const std::string bumped = fresh("ext"), count = fresh("tpr");
    line(fmt::format("{} = add i64 {}, {}", bumped, extent, k_.tile - 1));
    line(fmt::format("{} = sdiv i64 {}, {}", count, bumped, k_.tile));
    return count;
  }

  // ---- one tile: outer coordinates, reductions, row values, the element loop ----------------------
  void row() {
    std::string rest = "%t";
    std::string column_tile = "0";
    if (k_.tile > 0) {
      rest = fresh("row");
      column_tile = fresh("ctile");
      line(fmt::format("{} = sdiv i64 %t, {}", rest, tiles_per_row_));
      line(fmt::format("{} = srem i64 %t, {}", column_tile, tiles_per_row_));
    }
    const auto outer = k_.outer_vars();
    for (size_t d = outer.size(); d-- > 0;) {  // the last outer dim varies fastest
      const std::string extent = name(k_.vars[outer[d]].extent);
      var_value_[outer[d]] = fresh("o");
      line(fmt::format("{} = srem i64 {}, {}", var_value_[outer[d]], rest, extent));
      const std::string next = fresh("q");
      line(fmt::format("{} = sdiv i64 {}, {}", next, rest, extent));
      rest = next;
    }
    for (size_t i = 0; i < k_.body.size(); ++i) {
      if (scope_[i] == Scope::kRow) emit(static_cast<int>(i));
      else if (k_.body[i].op == ScalarOp::kReduce) reduction(static_cast<int>(i));
    }
    element_loop(column_tile);
  }

  // A loop nest over `vars`; the innermost is bounded by [lo, hi) when given. Calls body() inside.
  template <class Body>
  void loop_nest(const std::vector<int>& vars, const std::string& lo, const std::string& hi, Body&& body) {
    std::vector<std::string> tails;
    for (size_t d = 0; d < vars.size(); ++d) {
      const bool innermost = d + 1 == vars.size();
      const std::string tag = fresh("l").substr(1);
      const std::string slot = "%" + tag + ".i";
      line(fmt::format("{} = alloca i64", slot));
      line(fmt::format("store i64 {}, ptr {}", innermost && !lo.empty() ? lo : "0", slot));
      line(fmt::format("br label %{}.head", tag));
      label(tag + ".head");
      const std::string v = "%" + tag + ".v";
      line(fmt::format("{} = load i64, ptr {}", v, slot));
      const std::string bound = innermost && !hi.empty() ? hi : name(k_.vars[vars[d]].extent);
      line(fmt::format("%{}.more = icmp slt i64 {}, {}", tag, v, bound));
      line(fmt::format("br i1 %{}.more, label %{}.body, label %{}.end", tag, tag, tag));
      label(tag + ".body");
      var_value_[vars[d]] = v;
      tails.push_back(tag);
    }
    body();
    for (size_t d = tails.size(); d-- > 0;) {
      const std::string& tag = tails[d];
      line(fmt::format("%{}.n = add nsw i64 %{}.v, 1", tag, tag));
      line(fmt::format("store i64 %{}.n, ptr %{}.i", tag, tag));
      line(fmt::format("br label %{}.head", tag));
      label(tag + ".end");
    }
  }

  void element_loop(const std::string& column_tile) {
    const auto inner = k_.inner_vars();
    bool any = false;
    for (size_t i = 0; i < k_.body.size(); ++i) any |= scope_[i] == Scope::kElement;
    if (!any) return;
    std::string lo, hi;
    if (k_.tile > 0) {
      lo = fresh("jlo"), hi = fresh("jhi");
      const std::string end = fresh("jend"), over = fresh("jover");
      line(fmt::format("{} = mul i64 {}, {}", lo, column_tile, k_.tile));
      line(fmt::format("{} = add i64 {}, {}", end, lo, k_.tile));
      line(fmt::format("{} = icmp slt i64 {}, {}", over, name(k_.vars[inner[0]].extent), end));
      line(fmt::format("{} = select i1 {}, i64 {}, i64 {}", hi, over, name(k_.vars[inner[0]].extent), end));
    }
    auto saved = emitted_;
    loop_nest(inner, lo, hi, [&] {
      for (size_t i = 0; i < k_.body.size(); ++i)
        if (scope_[i] == Scope::kElement) emit(static_cast<int>(i));
    });
    emitted_ = std::move(saved);
  }

  // ---- reductions -------------------------------------------------------------------------------
  void reduction(int r) {
    const Expr& e = k_.body[r];
    const ScalarType t = e.dtype;
    const ScalarType vt = k_.body[e.a].dtype;  // the value's type (argmax yields int64 positions)
    const char* ty = compute_type(vt);
    const std::string acc = fmt::format("%acc{}", r), pos = fmt::format("%pos{}", r);
    line(fmt::format("{} = alloca {}", acc, ty));
    line(fmt::format("store {} {}, ptr {}", ty, identity(e.reduce, vt), acc));
    const bool arg = e.reduce == ReduceKind::kArgMax || e.reduce == ReduceKind::kArgMin;
    if (arg) {
      line(fmt::format("{} = alloca i64", pos));
      line(fmt::format("store i64 0, ptr {}", pos));
    }
    // Float max/min: maxnum/minnum (a reduction LLVM vectorizes) and a separate "saw a NaN" flag, since
    // ATen's max propagates NaN and maxnum ignores it.
    const bool nan_flag = is_float(vt) && (e.reduce == ReduceKind::kMax || e.reduce == ReduceKind::kMin);
    const std::string nan = fmt::format("%nan{}", r);
    if (nan_flag) {
      line(fmt::format("{} = alloca i1", nan));
      line(fmt::format("store i1 false, ptr {}", nan));
    }
    auto saved = emitted_;
    loop_nest(k_.loop_vars(e.loop), "", "", [&] {
      for (int i = 0; i < r; ++i)
        if (scope_[i] == Scope::kReduction && loop_of_[i] == e.loop) emit(i);
      const std::string old = fresh("old");
      line(fmt::format("{} = load {}, ptr {}", old, ty, acc));
      const std::string v = name(e.a);
      if (nan_flag) {
        const std::string fn = fmt::format("llvm.{}.{}", e.reduce == ReduceKind::kMax ? "maxnum" : "minnum", vt == ScalarType::Float ? "f32" : "f64");
        declare(fmt::format("{} @{}({}, {})", ty, fn, ty, ty));
        const std::string m = fresh("m"), is_nan = fresh("isnan"), seen = fresh("seen"), any = fresh("any");
        // nnan nsz: NaN is tracked by the flag; what LLVM needs to vectorize the reduction.
        line(fmt::format("{} = call nnan nsz {} @{}({} {}, {} {})", m, ty, fn, ty, old, ty, v));
        line(fmt::format("store {} {}, ptr {}", ty, m, acc));
        line(fmt::format("{} = fcmp uno {} {}, {}", is_nan, ty, v, v));
        line(fmt::format("{} = load i1, ptr {}", seen, nan));
        line(fmt::format("{} = or i1 {}, {}", any, seen, is_nan));
        line(fmt::format("store i1 {}, ptr {}", any, nan));
      } else if (arg) {
        const std::string take = better(e.reduce == ReduceKind::kArgMax, vt, v, old);
        const std::string nv = fresh("nv"), np = fresh("np"), op = fresh("op");
        line(fmt::format("{} = select i1 {}, {} {}, {} {}", nv, take, ty, v, ty, old));
        line(fmt::format("{} = load i64, ptr {}", op, pos));
        line(fmt::format("{} = select i1 {}, i64 {}, i64 {}", np, take, name(e.b), op));
        line(fmt::format("store {} {}, ptr {}", ty, nv, acc));
        line(fmt::format("store i64 {}, ptr {}", np, pos));
      } else {
        line(fmt::format("store {} {}, ptr {}", ty, combine(e.reduce, vt, old, v), acc));
      }
    });
    emitted_ = std::move(saved);
    if (nan_flag) {
      const std::string value = fresh("red"), seen = fresh("seen");
      line(fmt::format("{} = load {}, ptr {}", value, ty, acc));
      line(fmt::format("{} = load i1, ptr {}", seen, nan));
      line(fmt::format("{} = select i1 {}, {} {}, {} {}", name(r), seen, ty, float_literal(NAN, vt), ty, value));
    } else {
      line(fmt::format("{} = load {}, ptr {}", name(r), arg ? "i64" : compute_type(t), arg ? pos : acc));
    }
    emitted_[r] = true;
  }

  std::string identity(ReduceKind kind, ScalarType t) {
    const bool f = is_float(t);
    switch (kind) {
      case ReduceKind::kSum: return f ? "0.0" : "0";
      case ReduceKind::kProd: return f ? "1.0" : "1";
      case ReduceKind::kAny: return "false";
      case ReduceKind::kAll: return "true";
      case ReduceKind::kMax:
      case ReduceKind::kArgMax:
        if (f) return float_literal(-std::numeric_limits<double>::infinity(), t);
        return t == ScalarType::Bool ? "false" : is_unsigned(t) ? "0" : std::to_string(-(int64_t{1} << (bits(t) - 1)));
      case ReduceKind::kMin:
      case ReduceKind::kArgMin:
        if (f) return float_literal(std::numeric_limits<double>::infinity(), t);
        if (t == ScalarType::Bool) return "true";
        return is_unsigned(t) ? "-1" : std::to_string((int64_t{1} << (bits(t) - 2)) - 1 + (int64_t{1} << (bits(t) - 2)));
    }
    return "0";
  }

  // The accumulator update. Floating sums and products may be reassociated (so they vectorize);
  // max/min propagate NaN as ATen's do.
  std::string combine(ReduceKind kind, ScalarType t, const std::string& acc, const std::string& v) {
    const std::string out = fresh("acc");
    const char* ty = compute_type(t);
    const bool f = is_float(t);
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
      default: throw std::invalid_argument("cpu codegen: bad reduction");
    }
    return out;
  }

  // i1: does v replace the accumulator? Strictly better (ties keep the first), or a first NaN.
  std::string better(bool max, ScalarType t, const std::string& v, const std::string& acc) {
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
  std::string emit(int i) {
    if (emitted_[i]) return name(i);
    const Expr& e = k_.body[i];
    for (int operand : {e.a, e.b, e.c})
      if (operand >= 0 && !emitted_[operand] && k_.body[operand].op != ScalarOp::kReduce) emit(operand);
    emitted_[i] = true;
    expr(i, e);
    return name(i);
  }

  void expr(int i, const Expr& e) {
    const std::string v = name(i);
    const ScalarType t = e.dtype;
    const char* ty = compute_type(t);
    const bool f = is_float(t);
    const std::string a = e.a >= 0 ? name(e.a) : "", b = e.b >= 0 ? name(e.b) : "";
    const ScalarType at = e.a >= 0 ? k_.body[e.a].dtype : t;
    auto bin = [&](const char* fop, const char* iop) { line(fmt::format("{} = {} {} {}, {}", v, f ? fop : iop, ty, a, b)); };
    switch (e.op) {
      case ScalarOp::kVar:
        line(fmt::format("{} = add i64 {}, 0", v, var_value_.at(e.var)));
        break;
      case ScalarOp::kSym: {
        const std::string p = fresh("symp");
        line(fmt::format("{} = getelementptr i64, ptr %syms, i64 {}", p, e.var));
        line(fmt::format("{} = load i64, ptr {}", v, p));
        break;
      }
      case ScalarOp::kConst:
        if (f) line(fmt::format("{} = fadd {} {}, 0.0", v, ty, float_literal(e.value, t)));
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
      case ScalarOp::kWhere:
        line(fmt::format("{} = select i1 {}, {} {}, {} {}", v, a, ty, b, ty, name(e.c)));
        break;
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
      case ScalarOp::kSin: line(fmt::format("{} = {}", v, intrinsic("sin", t, a))); break;
      case ScalarOp::kCos: line(fmt::format("{} = {}", v, intrinsic("cos", t, a))); break;
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
      case ScalarOp::kAdd: bin("fadd", "add"); break;
      case ScalarOp::kSub: bin("fsub", "sub"); break;
      case ScalarOp::kMul: bin("fmul", "mul"); break;
      case ScalarOp::kDiv:
        if (f) bin("fdiv", "");
        else line(fmt::format("{} = {} {} {}, {}", v, is_unsigned(t) ? "udiv" : "sdiv", ty, a, safe_divisor(t, b)));
        break;
      case ScalarOp::kFloorDiv: floor_div(v, t, a, b); break;
      case ScalarOp::kRem: remainder(v, t, a, b); break;
      case ScalarOp::kPow:
        if (f) {
          const char* suffix = t == ScalarType::Float ? "f32" : "f64";
          declare(fmt::format("{} @llvm.pow.{}({}, {})", ty, suffix, ty, ty));
          line(fmt::format("{} = call {} @llvm.pow.{}({} {}, {} {})", v, ty, suffix, ty, a, ty, b));
        } else {
          int_pow(v, t, a, b);
        }
        break;
      case ScalarOp::kAtan2: {
        const std::string fn = fmt::format("atan2{}", libm_suffix(t));
        declare(fmt::format("{} @{}({}, {}) nounwind willreturn memory(none)", ty, fn, ty, ty));
        line(fmt::format("{} = call {} @{}({} {}, {} {})", v, ty, fn, ty, a, ty, b));
        break;
      }
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
      case ScalarOp::kReduce: throw std::logic_error("cpu codegen: reductions are emitted by reduction()");
    }
  }

  std::string address(const Expr& e) {
    const std::string p = fresh("p");
    line(fmt::format("{} = getelementptr {}, ptr %buf{}, i64 {}", p, storage_type(k_.buffers[e.buffer].dtype), e.buffer, name(e.a)));
    return p;
  }

  void load(const std::string& v, const Expr& e) {
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

  void store(const Expr& e) {
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
    line(fmt::format("store {} {}, ptr {}", storage_type(dtype), raw, address(e)));
  }

  const Kernel& k_;
  std::vector<Scope> scope_;
  std::vector<int> loop_of_;
  std::vector<bool> emitted_;
  std::unordered_map<int, std::string> var_value_;
  std::string tiles_per_row_;
};

}  // namespace

std::string emit_llvm_ir(const Kernel& kernel) { return Printer(kernel).run(); }

}  // namespace jitc::inductor
