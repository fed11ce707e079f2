#include "inductor/kernel_builder.h"

#include <jitc/detail/internal_assert.h>

#include <cmath>

#include <fmt/format.h>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace jitc::inductor {

using c10::ScalarType;

c10::ScalarType compute_type_of(c10::ScalarType dtype) {
  return dtype == ScalarType::Half || dtype == ScalarType::BFloat16 ? ScalarType::Float : dtype;
}

namespace {

// v (a float) rounded to half or bfloat16, as eager stores it.
double rounded(double v, ScalarType dtype) {
  const float f = static_cast<float>(v);
  return dtype == ScalarType::Half ? static_cast<float>(c10::Half(f)) : static_cast<float>(c10::BFloat16(f));
}

// v converted to the integer type t as C++ converts (modulo 2^bits), as eager's fill and casts do:
// full_like(uint8, -1) holds 255.
int64_t wrapped(int64_t v, ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return v != 0;
    case ScalarType::Byte: return static_cast<uint8_t>(v);
    case ScalarType::Char: return static_cast<int8_t>(v);
    case ScalarType::Short: return static_cast<int16_t>(v);
    case ScalarType::Int: return static_cast<int32_t>(v);
    default: return v;
  }
}

bool is_comparison(ScalarOp op) {
  return op == ScalarOp::kEq || op == ScalarOp::kNe || op == ScalarOp::kLt || op == ScalarOp::kLe || op == ScalarOp::kGt ||
         op == ScalarOp::kGe;
}

}  // namespace

int KernelBuilder::intern(const Expr& e, uint64_t deps) {
  const auto key = std::make_tuple(static_cast<int>(e.op), static_cast<int>(e.dtype), e.a, e.b, e.c, e.var, e.buffer, e.loop,
                                   static_cast<int>(e.reduce), std::bit_cast<int64_t>(e.value), e.ivalue);
  if (e.op != ScalarOp::kStore) {
    auto it = interned_.find(key);
    if (it != interned_.end()) return it->second;
  }
  kernel_.body.push_back(e);
  deps_.push_back(deps);
  const int id = static_cast<int>(kernel_.body.size()) - 1;
  if (e.op != ScalarOp::kStore) interned_.emplace(key, id);
  return id;
}

int KernelBuilder::add_var(LoopVar::Kind kind, const graph::SymExpr& extent, int loop) {
  if (kernel_.vars.size() >= 64) throw UnsupportedError("a kernel needs more than 64 loop variables");
  LoopVar v;
  v.kind = kind;
  v.extent = this->extent(extent);
  v.loop = loop;
  kernel_.vars.push_back(v);
  return static_cast<int>(kernel_.vars.size()) - 1;
}

int KernelBuilder::reduction_loop(const std::vector<graph::SymExpr>& extents, std::vector<int>* vars) {
  const int loop = kernel_.num_reduction_loops++;
  vars->clear();
  for (const auto& e : extents) vars->push_back(add_var(LoopVar::Kind::kReduction, e, loop));
  open_loops_.push_back(loop);
  return loop;
}

int64_t KernelBuilder::loop_elements(int loop) const {
  int64_t elements = 1;
  for (const LoopVar& v : kernel_.vars) {
    if (v.kind != LoopVar::Kind::kReduction || v.loop != loop) continue;
    const Expr& extent = kernel_.body[v.extent];
    if (extent.op != ScalarOp::kConst) return -1;
    elements *= extent.ivalue;
  }
  return elements;
}

int KernelBuilder::buffer(const std::string& name, c10::ScalarType dtype, bool written) {
  for (size_t b = 0; b < kernel_.buffers.size(); ++b)
    if (kernel_.buffers[b].name == name) {
      kernel_.buffers[b].written |= written;
      return static_cast<int>(b);
    }
  kernel_.buffers.push_back({name, dtype, written});
  return static_cast<int>(kernel_.buffers.size()) - 1;
}

int KernelBuilder::var(int v) {
  Expr e;
  e.op = ScalarOp::kVar;
  e.dtype = ScalarType::Long;
  e.var = v;
  return intern(e, uint64_t{1} << v);
}

int KernelBuilder::sym(int s) {
  Expr e;
  e.op = ScalarOp::kSym;
  e.dtype = ScalarType::Long;
  e.var = s;
  return intern(e, 0);
}

int KernelBuilder::sym_double(int s) {
  Expr e;
  e.op = ScalarOp::kSym;
  e.dtype = ScalarType::Double;
  e.var = s;
  return intern(e, 0);
}

int KernelBuilder::integer(int64_t v, c10::ScalarType dtype) {
  Expr e;
  e.op = ScalarOp::kConst;
  e.dtype = dtype;
  e.ivalue = wrapped(v, dtype);
  return intern(e, 0);
}

int KernelBuilder::floating(double v, c10::ScalarType dtype) {
  Expr e;
  e.op = ScalarOp::kConst;
  e.dtype = dtype;
  e.value = dtype == ScalarType::Float ? static_cast<double>(static_cast<float>(v)) : v;
  return intern(e, 0);
}

int KernelBuilder::constant(double v, c10::ScalarType dtype) {
  dtype = compute_type_of(dtype);
  if (dtype == ScalarType::Float || dtype == ScalarType::Double) return floating(v, dtype);
  if (dtype == ScalarType::Bool) return integer(v != 0 || std::isnan(v), dtype);  // bool(0.1) is true, as in eager
  return integer(static_cast<int64_t>(v), dtype);
}

int KernelBuilder::extent(const graph::SymExpr& e) {
  if (e.is_constant()) return index_constant(e.offset);
  int m = sym(e.factors[0]);
  if (e.factors[1] >= 0) m = mul(m, sym(e.factors[1]));
  return add(mul(index_constant(e.coeff), m), index_constant(e.offset));
}

bool KernelBuilder::is_constant(int e, int64_t* value) const {
  const Expr& x = kernel_.body[e];
  if (x.op != ScalarOp::kConst || x.dtype != ScalarType::Long) return false;
  *value = x.ivalue;
  return true;
}

int KernelBuilder::unary(ScalarOp op, int a) {
  Expr e;
  e.op = op;
  e.dtype = op == ScalarOp::kIsNan ? ScalarType::Bool : dtype(a);
  e.a = a;
  return intern(e, deps_[a]);
}

int KernelBuilder::binary(ScalarOp op, int a, int b) {
  JITC_INTERNAL_ASSERT(dtype(a) == dtype(b),
                       fmt::format("kernel builder: {} of {} and {}", op_name(op), c10::toString(dtype(a)), c10::toString(dtype(b))));
  int64_t x, y;
  const bool ca = is_constant(a, &x), cb = is_constant(b, &y);
  if (ca && cb && (op == ScalarOp::kAdd || op == ScalarOp::kMul || op == ScalarOp::kSub))
    return index_constant(op == ScalarOp::kAdd ? x + y : op == ScalarOp::kSub ? x - y : x * y);
  if (op == ScalarOp::kAdd && ca && x == 0) return b;
  if ((op == ScalarOp::kAdd || op == ScalarOp::kSub) && cb && y == 0) return a;
  if (op == ScalarOp::kMul && ((ca && x == 0) || (cb && y == 0))) return index_constant(0);
  if (op == ScalarOp::kMul && ca && x == 1) return b;
  if (op == ScalarOp::kMul && cb && y == 1) return a;
  if ((op == ScalarOp::kAdd || op == ScalarOp::kMul) && a > b) std::swap(a, b);  // one form for a+b and b+a
  Expr e;
  e.op = op;
  e.dtype = is_comparison(op) ? ScalarType::Bool : dtype(a);
  e.a = a;
  e.b = b;
  return intern(e, deps_[a] | deps_[b]);
}

int KernelBuilder::where(int cond, int a, int b) {
  JITC_INTERNAL_ASSERT(dtype(cond) == ScalarType::Bool && dtype(a) == dtype(b), "kernel builder: where types");
  if (a == b) return a;
  Expr e;
  e.op = ScalarOp::kWhere;
  e.dtype = dtype(a);
  e.a = cond;
  e.b = a;
  e.c = b;
  return intern(e, deps_[cond] | deps_[a] | deps_[b]);
}

int KernelBuilder::fma(int a, int b, int c) {
  const ScalarType t = dtype(a);
  JITC_INTERNAL_ASSERT(t == dtype(b) && t == dtype(c) && (t == ScalarType::Float || t == ScalarType::Double),
                       "kernel builder: fma of non-float or mixed types");
  Expr e;
  e.op = ScalarOp::kFma;
  e.dtype = t;
  e.a = a;
  e.b = b;
  e.c = c;
  return intern(e, deps_[a] | deps_[b] | deps_[c]);
}

int KernelBuilder::cast(int a, c10::ScalarType dtype) {
  dtype = compute_type_of(dtype);
  if (this->dtype(a) == dtype) return a;
  const Expr& x = kernel_.body[a];
  if (x.op == ScalarOp::kConst) {
    const bool from_float = x.dtype == ScalarType::Float || x.dtype == ScalarType::Double;
    if (dtype == ScalarType::Bool) return integer(from_float ? x.value != 0 : x.ivalue != 0, dtype);
    if (from_float && (dtype == ScalarType::Float || dtype == ScalarType::Double)) return floating(x.value, dtype);
    if (!from_float) return c10::isIntegralType(dtype, false) ? integer(x.ivalue, dtype) : constant(static_cast<double>(x.ivalue), dtype);
  }
  Expr e;
  e.op = ScalarOp::kCast;
  e.dtype = dtype;
  e.a = a;
  return intern(e, deps_[a]);
}

int KernelBuilder::round_to(int a, c10::ScalarType dtype) {
  if ((dtype != ScalarType::Half && dtype != ScalarType::BFloat16) || this->dtype(a) != ScalarType::Float) return a;
  if (holds(a, dtype)) return a;
  if (kernel_.body[a].op == ScalarOp::kConst) return floating(rounded(kernel_.body[a].value, dtype), ScalarType::Float);
  Expr e;
  e.op = ScalarOp::kRoundTo;
  e.dtype = ScalarType::Float;
  e.a = a;
  e.ivalue = static_cast<int64_t>(dtype);
  return intern(e, deps_[a]);
}

bool KernelBuilder::holds(int a, c10::ScalarType dtype) const {
  const Expr& x = kernel_.body[a];
  switch (x.op) {
    case ScalarOp::kRoundTo: return x.ivalue == static_cast<int64_t>(dtype);
    case ScalarOp::kLoad: return kernel_.buffers[x.buffer].dtype == dtype;
    case ScalarOp::kConst: return rounded(x.value, dtype) == x.value;
    case ScalarOp::kCast: {  // bools and 8-bit integers are exact in half and bfloat16
      const ScalarType from = kernel_.body[x.a].dtype;
      return from == ScalarType::Bool || from == ScalarType::Byte || from == ScalarType::Char;
    }
    case ScalarOp::kWhere: return holds(x.b, dtype) && holds(x.c, dtype);
    default: return false;
  }
}

int KernelBuilder::load(int buffer, int index) {
  Expr e;
  e.op = ScalarOp::kLoad;
  e.dtype = compute_type_of(kernel_.buffers[buffer].dtype);
  e.buffer = buffer;
  e.a = index;
  return intern(e, deps_[index]);
}

void KernelBuilder::store(int buffer, int index, int value) {
  Expr e;
  e.op = ScalarOp::kStore;
  e.dtype = dtype(value);
  e.buffer = buffer;
  e.a = index;
  e.b = value;
  intern(e, deps_[index] | deps_[value]);
}

void KernelBuilder::check(int holds) {
  JITC_INTERNAL_ASSERT(dtype(holds) == ScalarType::Bool, "kernel builder: a check takes a bool");
  const Expr& x = kernel_.body[holds];
  if (x.op == ScalarOp::kConst && x.ivalue != 0) return;  // holds always
  Expr e;
  e.op = ScalarOp::kCheck;
  e.dtype = ScalarType::Bool;
  e.a = holds;
  uint64_t deps = deps_[holds];
  const uint64_t reductions = vars_of_kind(LoopVar::Kind::kReduction);
  if (!elements_.empty())
    for (int position : elements_.back())
      if (deps_[position] & reductions & ~deps) {
        e.b = position;  // only placed by it: the code generators read `a`
        deps |= deps_[position];
        break;
      }
  intern(e, deps);
}

int KernelBuilder::reduce(ReduceKind kind, int value, int loop, int position) {
  if (auto open = std::find(open_loops_.begin(), open_loops_.end(), loop); open != open_loops_.end()) open_loops_.erase(open);
  Expr e;
  e.op = ScalarOp::kReduce;
  const bool arg = kind == ReduceKind::kArgMax || kind == ReduceKind::kArgMin;
  e.dtype = arg ? ScalarType::Long : dtype(value);
  e.reduce = kind;
  e.a = value;
  e.b = position;
  e.loop = loop;
  // The result is one value per row: it depends on what the operand depends on, minus the loop's vars.
  uint64_t deps = deps_[value] | (position >= 0 ? deps_[position] : 0);
  for (size_t v = 0; v < kernel_.vars.size(); ++v)
    if (kernel_.vars[v].kind == LoopVar::Kind::kReduction && kernel_.vars[v].loop == loop) deps &= ~(uint64_t{1} << v);
  return intern(e, deps);
}

int KernelBuilder::linear(const Index& index, const std::vector<graph::SymExpr>& strides) {
  int acc = index_constant(0);
  for (size_t d = 0; d < index.size(); ++d) acc = add(acc, mul(index[d], extent(strides[d])));
  return acc;
}

uint64_t KernelBuilder::vars_of_kind(LoopVar::Kind kind) const {
  uint64_t mask = 0;
  for (size_t v = 0; v < kernel_.vars.size(); ++v)
    if (kernel_.vars[v].kind == kind) mask |= uint64_t{1} << v;
  return mask;
}

}  // namespace jitc::inductor
