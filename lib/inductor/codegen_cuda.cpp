// Kernel IR -> CUDA C for NVRTC. One thread block per tile (a row, or a piece of a row for pointwise
// kernels), tiles in a grid-stride loop. Inside a row:
//   - a reduction loop is spread over the block's threads (thread t takes positions t, t + blockDim...),
//     then reduced through warp shuffles and shared memory; every thread gets the result;
//   - the element loop is spread the same way, so that neighbouring threads touch neighbouring elements
//     (coalesced loads and stores for contiguous tensors);
//   - a value stored once per row is written by thread 0.
// Signature: extern "C" __global__ void <name>(Buffers buffers, Symbols symbols, long long tiles).
#include "inductor/codegen_cuda.h"

#include "inductor/placement.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>

namespace jitc::inductor {

namespace {

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

// Helpers every kernel source starts with: conversions for half and bfloat16 (no CUDA headers needed),
// NaN-propagating max/min, Python's integer division and remainder, integer pow, block reductions.
constexpr const char* kPrelude = R"(
struct Symbols { long long v[16]; };
__device__ __forceinline__ float half_to_float(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short float_to_half(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float bf16_to_float(unsigned short b) { return __int_as_float(((unsigned int)b) << 16); }
__device__ __forceinline__ unsigned short float_to_bf16(float f) {
  if (f != f) return 0x7FC0;
  unsigned int u = __float_as_uint(f);
  return (unsigned short)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
template <class T> __device__ __forceinline__ T max_nan(T a, T b) { return (a > b || a != a) ? a : b; }
template <class T> __device__ __forceinline__ T min_nan(T a, T b) { return (a < b || a != a) ? a : b; }
template <class T> __device__ __forceinline__ T safe_divisor(T b) { return b == 0 ? T(1) : b; }
template <class T> __device__ __forceinline__ T floor_div_int(T a, T b) {
  b = safe_divisor(b); T q = a / b, r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
template <class T> __device__ __forceinline__ T rem_int(T a, T b) {
  b = safe_divisor(b); T r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <class T> __device__ __forceinline__ T rem_float(T a, T b) {
  T r = fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <class T> __device__ __forceinline__ T pow_int(T base, T e) {
  if (e < 0) return base == 1 ? T(1) : base == -1 ? ((e & 1) ? T(-1) : T(1)) : T(0);
  T result = 1;
  while (e) { if (e & 1) result *= base; base *= base; e >>= 1; }
  return result;
}
template <class T> __device__ __forceinline__ T sign_of(T a) { return T((T(0) < a) - (a < T(0))); }
// Every thread gets the combination of every thread's value.
template <class T, class F> __device__ T block_reduce(T v, F f, T identity) {
  __shared__ T shared[32];
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_down_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < (blockDim.x >> 5) ? shared[lane] : identity;
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_down_sync(0xffffffffu, v, o));
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  return shared[0];
}
// argmax / argmin: (value, position) pairs; a strictly better value or a first NaN wins, ties keep the
// lower position (ATen's first occurrence).
template <class T> __device__ __forceinline__ bool arg_better(bool max, T v, long long i, T w, long long j) {
  if (v != v || w != w) return (v != v && w == w) || (v != v && w != w && i < j);
  if (v == w) return i < j;
  return max ? v > w : v < w;
}
template <class T> __device__ long long block_arg_reduce(bool max, T v, long long i) {
  __shared__ T values[32];
  __shared__ long long positions[32];
  for (int o = 16; o > 0; o >>= 1) {
    T w = __shfl_down_sync(0xffffffffu, v, o); long long j = __shfl_down_sync(0xffffffffu, i, o);
    if (arg_better(max, w, j, v, i)) { v = w; i = j; }
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) { values[warp] = v; positions[warp] = i; }
  __syncthreads();
  if (warp == 0) {
    const bool live = threadIdx.x < (blockDim.x >> 5);
    v = live ? values[lane] : v; i = live ? positions[lane] : (long long)1 << 62;
    for (int o = 16; o > 0; o >>= 1) {
      T w = __shfl_down_sync(0xffffffffu, v, o); long long j = __shfl_down_sync(0xffffffffu, i, o);
      if (arg_better(max, w, j, v, i)) { v = w; i = j; }
    }
    if (threadIdx.x == 0) positions[0] = i;
  }
  __syncthreads();
  return positions[0];
}
)";

std::string literal(double v, ScalarType t) {
  if (std::isnan(v)) return t == ScalarType::Float ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000ll)";
  if (std::isinf(v)) return fmt::format("{}__int_as_float(0x7f800000)", v < 0 ? "-" : "");
  return t == ScalarType::Float ? fmt::format("{:.9e}f", static_cast<float>(v)) : fmt::format("{:.17e}", v);
}

class Printer {
 public:
  Printer(const Kernel& k, bool index32) : k_(k), index32_(index32), placement_(place(k)), emitted_(k.body.size()) { mark_indices(); }

  std::string run() {
    // Indices in 32 bits when every buffer the kernel touches has fewer than 2^31 elements: 64-bit integer
    // arithmetic costs GPUs several instructions per operation.
    out_ += fmt::format("typedef {} idx_t;\n", index32_ ? "int" : "long long");
    out_ += fmt::format("struct Buffers_{} {{ void* p[{}]; }};\n", k_.name, std::max<size_t>(1, k_.buffers.size()));
    out_ += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(Buffers_{} buffers, Symbols symbols, long long tiles) {{\n",
                        kCudaBlockThreads, k_.name, k_.name);
    for (size_t b = 0; b < k_.buffers.size(); ++b)
      line(fmt::format("{}* __restrict__ buf{} = ({}*)buffers.p[{}];", storage_type(k_.buffers[b].dtype), b,
                       storage_type(k_.buffers[b].dtype), b));
    for (size_t i = 0; i < k_.body.size(); ++i)
      if (placement_.scope[i] == Scope::kEntry) emit(static_cast<int>(i));
    tiles_per_row_ = tiles_per_row();
    line("for (idx_t t = blockIdx.x; t < (idx_t)tiles; t += gridDim.x) {");
    row();
    line("__syncthreads();");
    line("}");
    out_ += "}\n";
    return out_;
  }

 private:
  void line(const std::string& s) { out_ += "  " + s + "\n"; }
  std::string name(int e) const { return fmt::format("e{}", e); }
  std::string fresh(const char* stem) { return fmt::format("{}{}", stem, counter_++); }

  std::string tiles_per_row() {
    if (k_.tile == 0) return "1ll";
    const auto inner = k_.inner_vars();
    if (inner.size() != 1) throw std::invalid_argument("cuda codegen: a tiled kernel needs exactly one inner dim");
    const std::string v = fresh("tpr");
    line(fmt::format("const idx_t {} = ({} + {}) / {};", v, name(k_.vars[inner[0]].extent), k_.tile - 1, k_.tile));
    return v;
  }

  void row() {
    std::string rest = "t", column_tile = "0ll";
    if (k_.tile > 0) {
      rest = fresh("row");
      column_tile = fresh("ctile");
      line(fmt::format("const idx_t {} = t / {}, {} = t % {};", rest, tiles_per_row_, column_tile, tiles_per_row_));
    }
    const auto outer = k_.outer_vars();
    for (size_t d = outer.size(); d-- > 0;) {
      const std::string extent = name(k_.vars[outer[d]].extent);
      var_value_[outer[d]] = fresh("o");
      const std::string next = fresh("q");
      line(fmt::format("const idx_t {} = {} % {}, {} = {} / {};", var_value_[outer[d]], rest, extent, next, rest, extent));
      rest = next;
    }
    for (size_t i = 0; i < k_.body.size(); ++i) {
      if (placement_.scope[i] == Scope::kRow) emit(static_cast<int>(i));
      else if (k_.body[i].op == ScalarOp::kReduce) reduction(static_cast<int>(i));
    }
    element_loop(column_tile);
  }

  // A loop over the product of `vars`' extents (or [lo, hi) of one var), spread over the block.
  template <class Body>
  void block_loop(const std::vector<int>& vars, const std::string& lo, const std::string& hi, Body&& body) {
    std::string total = "((idx_t)1)";
    for (int v : vars) total = fmt::format("({} * {})", total, name(k_.vars[v].extent));
    const std::string i = fresh("i");
    if (!lo.empty()) line(fmt::format("for (idx_t {} = {} + threadIdx.x; {} < {}; {} += blockDim.x) {{", i, lo, i, hi, i));
    else line(fmt::format("for (idx_t {} = threadIdx.x; {} < {}; {} += blockDim.x) {{", i, i, total, i));
    std::string rest = i;
    for (size_t d = vars.size(); d-- > 0;) {
      if (!lo.empty() || d == 0) {
        var_value_[vars[d]] = rest;
        continue;
      }
      const std::string extent = name(k_.vars[vars[d]].extent);
      var_value_[vars[d]] = fresh("c");
      const std::string next = fresh("r");
      line(fmt::format("const idx_t {} = {} % {}, {} = {} / {};", var_value_[vars[d]], rest, extent, next, rest, extent));
      rest = next;
    }
    body();
    line("}");
  }

  void element_loop(const std::string& column_tile) {
    bool any = false;
    for (size_t i = 0; i < k_.body.size(); ++i) any |= placement_.scope[i] == Scope::kElement;
    if (!any) return;
    std::string lo, hi;
    const auto inner = k_.inner_vars();
    if (k_.tile > 0) {
      lo = fresh("lo"), hi = fresh("hi");
      const std::string extent = name(k_.vars[inner[0]].extent);
      line(fmt::format("const idx_t {} = {} * {}, {} = min({}, ({})({} + {}));", lo, column_tile, k_.tile, hi, extent, "idx_t", lo, k_.tile));
    }
    auto saved = emitted_;
    block_loop(inner, lo, hi, [&] {
      for (size_t i = 0; i < k_.body.size(); ++i)
        if (placement_.scope[i] == Scope::kElement) emit(static_cast<int>(i));
    });
    emitted_ = std::move(saved);
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

  static int bits(ScalarType t) {
    switch (t) {
      case ScalarType::Long: return 64;
      case ScalarType::Int: return 32;
      case ScalarType::Short: return 16;
      default: return 8;
    }
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

  void reduction(int r) {
    const Expr& e = k_.body[r];
    const ScalarType vt = k_.body[e.a].dtype;
    // bools reduce as ints: shuffles move 32-bit words
    const std::string ty = vt == ScalarType::Bool ? "int" : c_type(vt);
    const bool arg = e.reduce == ReduceKind::kArgMax || e.reduce == ReduceKind::kArgMin;
    const std::string acc = fresh("acc"), pos = fresh("pos");
    line(fmt::format("{} {} = {};", ty, acc, identity(e.reduce, vt)));
    if (arg) line(fmt::format("long long {} = (long long)1 << 62;", pos));
    auto saved = emitted_;
    block_loop(k_.loop_vars(e.loop), "", "", [&] {
      for (int i = 0; i < r; ++i)
        if (placement_.scope[i] == Scope::kReduction && placement_.loop[i] == e.loop) emit(i);
      const std::string v = name(e.a);
      if (arg)
        line(fmt::format("if (arg_better<{}>({}, {}, {}, {}, {})) {{ {} = {}; {} = {}; }}", ty, e.reduce == ReduceKind::kArgMax, v,
                         name(e.b), acc, pos, acc, v, pos, name(e.b)));
      else
        line(fmt::format("{{ const {} a = {}, b = {}; {} = {}; }}", ty, acc, v, acc, combiner(e.reduce)));
    });
    emitted_ = std::move(saved);
    if (arg) {
      line(fmt::format("const long long {} = block_arg_reduce<{}>({}, {}, {});", name(r), ty, e.reduce == ReduceKind::kArgMax, acc, pos));
    } else {
      line(fmt::format("const {} {} = ({})block_reduce<{}>({}, [](const {} a, const {} b) {{ return {}; }}, {});",
                       c_type(e.dtype), name(r), c_type(e.dtype), ty, acc, ty, ty, combiner(e.reduce), identity(e.reduce, vt)));
    }
    emitted_[r] = true;
  }

  std::string emit(int i) {
    if (emitted_[i]) return name(i);
    const Expr& e = k_.body[i];
    for (int operand : {e.a, e.b, e.c})
      if (operand >= 0 && !emitted_[operand] && k_.body[operand].op != ScalarOp::kReduce) emit(operand);
    emitted_[i] = true;
    expr(i, e);
    return name(i);
  }

  static const char* math_name(ScalarOp op) {
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

  void expr(int i, const Expr& e) {
    const ScalarType t = e.dtype;
    const std::string ty = index_[i] ? "idx_t" : c_type(t);
    const bool f = is_float(t);
    const std::string a = e.a >= 0 ? name(e.a) : "", b = e.b >= 0 ? name(e.b) : "", c = e.c >= 0 ? name(e.c) : "";
    auto define = [&](const std::string& value) { line(fmt::format("const {} {} = {};", ty, name(i), value)); };
    if (const char* fn = math_name(e.op); fn && f) {
      define(fmt::format("{}{}({})", fn, t == ScalarType::Float ? "f" : "", a));
      return;
    }
    switch (e.op) {
      case ScalarOp::kVar: define(var_value_.at(e.var)); break;
      case ScalarOp::kSym: define(fmt::format("(idx_t)symbols.v[{}]", e.var)); break;
      case ScalarOp::kConst: define(f ? literal(e.value, t) : t == ScalarType::Bool ? (e.ivalue ? "true" : "false") : fmt::format("({}){}ll", ty, e.ivalue)); break;
      case ScalarOp::kLoad: load(i, e); break;
      case ScalarOp::kStore: store(e); break;
      case ScalarOp::kCast:
        define(t == ScalarType::Bool ? fmt::format("({} != 0)", a) : fmt::format("({})({})", ty, a));
        break;
      case ScalarOp::kRoundTo:
        define(static_cast<ScalarType>(e.ivalue) == ScalarType::Half ? fmt::format("half_to_float(float_to_half({}))", a)
                                                                    : fmt::format("bf16_to_float(float_to_bf16({}))", a));
        break;
      case ScalarOp::kWhere: define(fmt::format("{} ? {} : {}", a, b, c)); break;
      case ScalarOp::kNeg: define(t == ScalarType::Bool ? a : fmt::format("({})(-{})", ty, a)); break;
      case ScalarOp::kAbs: define(f ? fmt::format("fabs({})", a) : is_unsigned(t) ? a : fmt::format("({})({} < 0 ? -{} : {})", ty, a, a, a)); break;
      case ScalarOp::kFloor:
      case ScalarOp::kCeil:
      case ScalarOp::kRound:
      case ScalarOp::kTrunc: define(a); break;  // integers
      case ScalarOp::kNot: define(fmt::format("!{}", a)); break;
      case ScalarOp::kBitNot: define(fmt::format("({})(~{})", ty, a)); break;
      case ScalarOp::kIsNan: define(fmt::format("({} != {})", a, a)); break;
      case ScalarOp::kSign: define(fmt::format("sign_of<{}>({})", ty, a)); break;
      case ScalarOp::kAdd: define(fmt::format("({})({} + {})", ty, a, b)); break;
      case ScalarOp::kSub: define(fmt::format("({})({} - {})", ty, a, b)); break;
      case ScalarOp::kMul: define(fmt::format("({})({} * {})", ty, a, b)); break;
      case ScalarOp::kDiv: define(f ? fmt::format("{} / {}", a, b) : fmt::format("({})({} / safe_divisor({}))", ty, a, b)); break;
      case ScalarOp::kFloorDiv: define(f ? fmt::format("floor({} / {})", a, b) : fmt::format("floor_div_int<{}>({}, {})", ty, a, b)); break;
      case ScalarOp::kRem: define(f ? fmt::format("rem_float<{}>({}, {})", ty, a, b) : fmt::format("rem_int<{}>({}, {})", ty, a, b)); break;
      case ScalarOp::kPow: define(f ? fmt::format("pow({}, {})", a, b) : fmt::format("pow_int<{}>({}, {})", ty, a, b)); break;
      case ScalarOp::kAtan2: define(fmt::format("atan2({}, {})", a, b)); break;
      case ScalarOp::kMax: define(fmt::format("max_nan<{}>({}, {})", ty, a, b)); break;
      case ScalarOp::kMin: define(fmt::format("min_nan<{}>({}, {})", ty, a, b)); break;
      case ScalarOp::kAnd: define(fmt::format("({})({} & {})", ty, a, b)); break;
      case ScalarOp::kOr: define(fmt::format("({})({} | {})", ty, a, b)); break;
      case ScalarOp::kXor: define(fmt::format("({})({} ^ {})", ty, a, b)); break;
      case ScalarOp::kShl: define(fmt::format("({})({} << {})", ty, a, b)); break;
      case ScalarOp::kShr: define(fmt::format("({})({} >> {})", ty, a, b)); break;
      case ScalarOp::kEq: define(fmt::format("({} == {})", a, b)); break;
      case ScalarOp::kNe: define(fmt::format("({} != {})", a, b)); break;
      case ScalarOp::kLt: define(fmt::format("({} < {})", a, b)); break;
      case ScalarOp::kLe: define(fmt::format("({} <= {})", a, b)); break;
      case ScalarOp::kGt: define(fmt::format("({} > {})", a, b)); break;
      case ScalarOp::kGe: define(fmt::format("({} >= {})", a, b)); break;
      default: throw std::invalid_argument(fmt::format("cuda codegen: {} on {}", op_name(e.op), c10::toString(t)));
    }
  }

  void load(int i, const Expr& e) {
    const ScalarType dtype = k_.buffers[e.buffer].dtype;
    const std::string raw = fmt::format("buf{}[{}]", e.buffer, name(e.a));
    std::string value = raw;
    if (dtype == ScalarType::Half) value = fmt::format("half_to_float({})", raw);
    if (dtype == ScalarType::BFloat16) value = fmt::format("bf16_to_float({})", raw);
    if (dtype == ScalarType::Bool) value = fmt::format("({} != 0)", raw);
    line(fmt::format("const {} {} = {};", c_type(e.dtype), name(i), value));
  }

  void store(const Expr& e) {
    const ScalarType dtype = k_.buffers[e.buffer].dtype;
    std::string value = name(e.b);
    if (dtype == ScalarType::Half) value = fmt::format("float_to_half({})", value);
    if (dtype == ScalarType::BFloat16) value = fmt::format("float_to_bf16({})", value);
    if (dtype == ScalarType::Bool) value = fmt::format("(unsigned char){}", value);
    // A value stored once per row is written by one thread.
    const bool per_row = placement_.scope[&e - k_.body.data()] == Scope::kRow;
    line(fmt::format("{}buf{}[{}] = {};", per_row ? "if (threadIdx.x == 0) " : "", e.buffer, name(e.a), value));
  }

  // Integer expressions computed from loop variables, sizes and constants only: indices, printed as idx_t.
  void mark_indices() {
    index_.assign(k_.body.size(), false);
    for (size_t i = 0; i < k_.body.size(); ++i) {
      const Expr& e = k_.body[i];
      if (e.dtype != ScalarType::Long) continue;
      bool from_indices = true;
      for (int operand : {e.a, e.b, e.c}) from_indices = from_indices && (operand < 0 || index_[operand]);
      const bool leaf = e.op == ScalarOp::kVar || e.op == ScalarOp::kSym || e.op == ScalarOp::kConst;
      const bool arithmetic = e.op == ScalarOp::kAdd || e.op == ScalarOp::kSub || e.op == ScalarOp::kMul ||
                              e.op == ScalarOp::kDiv || e.op == ScalarOp::kRem || e.op == ScalarOp::kMax || e.op == ScalarOp::kMin;
      index_[i] = leaf || (arithmetic && from_indices);
    }
  }

  const Kernel& k_;
  bool index32_;
  std::vector<bool> index_;
  Placement placement_;
  std::vector<bool> emitted_;
  std::unordered_map<int, std::string> var_value_;
  std::string out_, tiles_per_row_;
  int counter_ = 0;
};

}  // namespace

std::string emit_cuda(const Kernel& kernel, bool index32) { return Printer(kernel, index32).run(); }
std::string cuda_prelude() { return kPrelude; }

int64_t evaluate_size(const Kernel& k, int e, const int64_t* symbols) {
  const Expr& x = k.body[e];
  switch (x.op) {
    case ScalarOp::kConst: return x.ivalue;
    case ScalarOp::kSym: return symbols[x.var];
    case ScalarOp::kAdd: return evaluate_size(k, x.a, symbols) + evaluate_size(k, x.b, symbols);
    case ScalarOp::kSub: return evaluate_size(k, x.a, symbols) - evaluate_size(k, x.b, symbols);
    case ScalarOp::kMul: return evaluate_size(k, x.a, symbols) * evaluate_size(k, x.b, symbols);
    default: throw std::invalid_argument(fmt::format("a size expression uses {}", op_name(x.op)));
  }
}

int64_t tile_count(const Kernel& k, const int64_t* symbols) {
  int64_t tiles = 1;
  for (int v : k.outer_vars()) tiles *= evaluate_size(k, k.vars[v].extent, symbols);
  if (k.tile > 0) {
    const int64_t inner = evaluate_size(k, k.vars[k.inner_vars().at(0)].extent, symbols);
    tiles *= (inner + k.tile - 1) / k.tile;
  }
  return tiles;
}

}  // namespace jitc::inductor
