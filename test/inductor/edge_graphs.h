// The differential fuzzer at the edges (issue 23): random op chains over the lowered ops of every
// family (lib/inductor/lower_*.cpp: unary and binary math, casts, comparisons, logical and bitwise ops,
// shifts, modular ops, reductions, views, indexing, factories, in-place ops on arguments and on their
// views), on inputs of every dtype filled with edge values (0, -0, +-inf, NaN, denormals, huge values,
// integer min/max, exact multiples) and laid out as views (transposes, slices with offsets, expanded and
// size-0/size-1 dims, arguments that overlap another argument). Each program runs through jitc::compile
// (trace on the first call, the compiled program on the later ones) and eagerly, on fresh copies of the
// same inputs; results and every argument afterwards must agree: integers and bools exactly, floats
// within a chain's tolerance with NaN, infinities and signed zeros where eager has them. A second set of
// values (same layouts) runs on the compiled program too; where eager raises on it, jitc must raise the
// same error (type and text).
//
// Order-dependent float reductions (sum, mean, prod, var, softmax...) only take operands whose finite
// values are moderate: over huge values their result depends on the summation order, which differs
// between any two correct implementations (ATen's own vectorized and scalar loops included).
// fmod, remainder and floor division of floats take only divisors whose quotients stay small
// (|a / b| < 2^20): eager's vectorized fmod (Sleef) differs from its scalar loop past that, so eager's
// own result depends on an element's position (see eager_per_element in test_semantics.cpp, which tests
// those quotients against eager's scalar loop).
//
// A failure prints the program; JITC_FUZZ_SEED=<s> replays one seed, JITC_FUZZ_SEEDS=<a>:<b> runs seeds
// a..b-1 (test_random.cpp's [fuzz] case runs a short CI budget by default).
#pragma once
#include "support/parity.h"
#include "support/random_choices.h"

#include <ATen/MemoryOverlap.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

namespace jitc::testing::edge_graphs {

using Shape = std::vector<int64_t>;
using c10::ScalarType;

inline const std::vector<ScalarType> kDtypes = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kChar,
                                               at::kShort, at::kInt,    at::kLong, at::kByte,     at::kBool};

// How an argument is laid out: its logical sizes are `sizes`, its storage is made bigger or permuted.
enum class Layout { kContiguous, kTransposed, kSliced, kExpanded, kOverlapping };

struct Input {
  ScalarType dtype = at::kFloat;
  Shape sizes;
  Layout layout = Layout::kContiguous;
  int64_t dim = 0, offset = 0, step = 1;  // kSliced: the sliced dim, its offset and step; kExpanded: the expanded dim
  int of = -1;                            // kOverlapping: the earlier argument this one is a view of
};

// One step: its result joins the pool (an in-place step's result is its target, mutated).
struct Step {
  int op = 0;
  int a = 0, b = 0;
  int64_t dim = 0, dim2 = 0, start = 0, length = 0;
  bool keepdim = false, flag = false;
  double scalar = 0;
  bool integral_scalar = false;
  ScalarType dtype = at::kFloat;
  Shape ints;
};

struct Program {
  uint32_t seed = 0;
  std::vector<Input> inputs;
  std::vector<Step> steps;
  std::vector<int> outputs;
  bool raises_on_second = false;  // eager raises on the second value set
  // Per pool entry: the coarsest float type an inexact value on its way was rounded to (Half or
  // BFloat16; Double for none), which sets its tolerance whatever its own dtype (see tolerance_for).
  std::vector<ScalarType> coarsest;
  std::vector<bool> rounds;  // per step: an inexact op (inexact_op) with a float result
};

using Pool = std::vector<at::Tensor>;
enum class Kind { kUnary, kBinary, kScalar, kCast, kReduction, kView, kIndex, kFactory, kInplace };

struct OpInfo {
  const char* name;
  Kind kind;
  std::function<at::Tensor(const Step&, Pool&)> run;
  bool order_dependent = false;  // a float reduction whose result depends on the summation order
  bool modular = false;          // fmod/remainder/floor division: small quotients only for floats
};

inline at::Scalar scalar_of(const Step& s) {
  if (s.integral_scalar) return at::Scalar(static_cast<int64_t>(s.scalar));
  return at::Scalar(s.scalar);
}

inline const std::vector<OpInfo>& ops() {
  using T = const at::Tensor&;
  auto u = [](const char* name, std::function<at::Tensor(T)> f) {
    return OpInfo{name, Kind::kUnary, [f](const Step& s, Pool& p) { return f(p[s.a]); }};
  };
  auto b = [](const char* name, std::function<at::Tensor(T, T)> f, bool modular = false) {
    return OpInfo{name, Kind::kBinary, [f](const Step& s, Pool& p) { return f(p[s.a], p[s.b]); }, false, modular};
  };
  auto sc = [](const char* name, std::function<at::Tensor(T, const at::Scalar&)> f, bool modular = false) {
    return OpInfo{name, Kind::kScalar, [f](const Step& s, Pool& p) { return f(p[s.a], scalar_of(s)); }, false, modular};
  };
  auto red = [](const char* name, std::function<at::Tensor(T, const Step&)> f, bool order_dependent) {
    return OpInfo{name, Kind::kReduction, [f](const Step& s, Pool& p) { return f(p[s.a], s); }, order_dependent};
  };
  auto view = [](const char* name, std::function<at::Tensor(T, const Step&)> f) {
    return OpInfo{name, Kind::kView, [f](const Step& s, Pool& p) { return f(p[s.a], s); }};
  };
  auto inplace = [](const char* name, std::function<void(const at::Tensor&, const Step&, const Pool&)> f) {
    return OpInfo{name, Kind::kInplace, [f](const Step& s, Pool& p) {
                    at::Tensor t = p[s.a];
                    f(t, s, p);
                    return t;
                  }};
  };
  static const std::vector<OpInfo> table = {
      u("neg", [](T x) { return x.neg(); }), u("abs", [](T x) { return x.abs(); }), u("exp", [](T x) { return x.exp(); }),
      u("exp2", [](T x) { return x.exp2(); }), u("expm1", [](T x) { return x.expm1(); }), u("log", [](T x) { return x.log(); }),
      u("log2", [](T x) { return x.log2(); }), u("log10", [](T x) { return x.log10(); }), u("log1p", [](T x) { return x.log1p(); }),
      u("sqrt", [](T x) { return x.sqrt(); }), u("rsqrt", [](T x) { return x.rsqrt(); }), u("sin", [](T x) { return x.sin(); }),
      u("cos", [](T x) { return x.cos(); }), u("tan", [](T x) { return x.tan(); }), u("asin", [](T x) { return x.asin(); }),
      u("acos", [](T x) { return x.acos(); }), u("atan", [](T x) { return x.atan(); }), u("sinh", [](T x) { return x.sinh(); }),
      u("cosh", [](T x) { return x.cosh(); }), u("tanh", [](T x) { return x.tanh(); }), u("asinh", [](T x) { return x.asinh(); }),
      u("acosh", [](T x) { return x.acosh(); }), u("atanh", [](T x) { return x.atanh(); }), u("erf", [](T x) { return x.erf(); }),
      u("erfc", [](T x) { return x.erfc(); }), u("floor", [](T x) { return x.floor(); }), u("ceil", [](T x) { return x.ceil(); }),
      u("round", [](T x) { return x.round(); }), u("trunc", [](T x) { return x.trunc(); }), u("frac", [](T x) { return x.frac(); }),
      u("sign", [](T x) { return x.sign(); }), u("sgn", [](T x) { return x.sgn(); }), u("reciprocal", [](T x) { return x.reciprocal(); }),
      u("square", [](T x) { return x.square(); }), u("sigmoid", [](T x) { return x.sigmoid(); }), u("relu", [](T x) { return x.relu(); }),
      u("gelu", [](T x) { return at::gelu(x); }), u("gelu_tanh", [](T x) { return at::gelu(x, "tanh"); }),
      u("silu", [](T x) { return at::silu(x); }), u("mish", [](T x) { return at::mish(x); }),
      u("softplus", [](T x) { return at::softplus(x, 2.0, 3.0); }), u("hardswish", [](T x) { return at::hardswish(x); }),
      u("hardsigmoid", [](T x) { return at::hardsigmoid(x); }), u("leaky_relu", [](T x) { return at::leaky_relu(x, 0.2); }),
      u("elu", [](T x) { return at::elu(x, 0.7); }), u("hardtanh", [](T x) { return at::hardtanh(x, -0.5, 2.0); }),
      u("relu6", [](T x) { return at::relu6(x); }), u("isnan", [](T x) { return x.isnan(); }), u("isinf", [](T x) { return x.isinf(); }),
      u("isfinite", [](T x) { return x.isfinite(); }), u("logical_not", [](T x) { return x.logical_not(); }),
      u("bitwise_not", [](T x) { return x.bitwise_not(); }), u("clone", [](T x) { return x.clone(); }),
      u("contiguous", [](T x) { return x.contiguous(); }), u("pow2", [](T x) { return x.pow(2); }),
      u("pow_half", [](T x) { return x.pow(0.5); }), u("pow_m1", [](T x) { return x.pow(-1); }), u("pow_m2", [](T x) { return x.pow(-2.0); }),
      b("add", [](T x, T y) { return x + y; }), b("add_alpha", [](T x, T y) { return at::add(x, y, 3); }),
      b("sub", [](T x, T y) { return x - y; }), b("mul", [](T x, T y) { return x * y; }), b("div", [](T x, T y) { return x / y; }),
      b("div_trunc", [](T x, T y) { return at::div(x, y, "trunc"); }, true),
      b("div_floor", [](T x, T y) { return at::div(x, y, "floor"); }, true),
      b("floor_divide", [](T x, T y) { return at::floor_divide(x, y); }, true),
      b("remainder", [](T x, T y) { return at::remainder(x, y); }, true), b("fmod", [](T x, T y) { return at::fmod(x, y); }, true),
      b("pow", [](T x, T y) { return at::pow(x, y); }), b("atan2", [](T x, T y) { return at::atan2(x, y); }),
      // + 0 makes a zero result +0: which zero max(-0, +0) gives depends on the element's position in eager
      // (its vectorized loop takes the second operand, its scalar loop the first)
      b("maximum", [](T x, T y) { return at::maximum(x, y) + 0; }), b("minimum", [](T x, T y) { return at::minimum(x, y) + 0; }),
      b("eq", [](T x, T y) { return x == y; }), b("ne", [](T x, T y) { return x != y; }), b("lt", [](T x, T y) { return x < y; }),
      b("le", [](T x, T y) { return x <= y; }), b("gt", [](T x, T y) { return x > y; }), b("ge", [](T x, T y) { return x >= y; }),
      b("logical_and", [](T x, T y) { return at::logical_and(x, y); }), b("logical_or", [](T x, T y) { return at::logical_or(x, y); }),
      b("logical_xor", [](T x, T y) { return at::logical_xor(x, y); }), b("bitwise_and", [](T x, T y) { return at::bitwise_and(x, y); }),
      b("bitwise_or", [](T x, T y) { return at::bitwise_or(x, y); }), b("bitwise_xor", [](T x, T y) { return at::bitwise_xor(x, y); }),
      b("left_shift", [](T x, T y) { return at::bitwise_left_shift(x, y); }),
      b("right_shift", [](T x, T y) { return at::bitwise_right_shift(x, y); }),
      b("where", [](T x, T y) { return at::where(x > y, x, y); }), b("where_bool", [](T x, T y) { return at::where(x.to(at::kBool), x, y); }),
      b("masked_fill", [](T x, T y) { return x.masked_fill(y.to(at::kBool), 3); }),
      b("clamp_tensor", [](T x, T y) { return at::clamp(x, y, std::optional<at::Tensor>()) + 0; }),
      b("clamp_max_tensor", [](T x, T y) { return at::clamp_max(x, y) + 0; }),
      b("addcmul", [](T x, T y) { return at::addcmul(x, x, y, 0.5); }), b("addcdiv", [](T x, T y) { return at::addcdiv(x, y, x, 2); }),
      b("lerp", [](T x, T y) { return at::lerp(x, y, 0.3); }),
      sc("add_s", [](T x, const at::Scalar& s) { return x + s; }), sc("sub_s", [](T x, const at::Scalar& s) { return x - s; }),
      sc("rsub_s", [](T x, const at::Scalar& s) { return at::rsub(x, s); }), sc("mul_s", [](T x, const at::Scalar& s) { return x * s; }),
      sc("div_s", [](T x, const at::Scalar& s) { return x / s; }),
      sc("fmod_s", [](T x, const at::Scalar& s) { return at::fmod(x, s); }, true),
      sc("remainder_s", [](T x, const at::Scalar& s) { return at::remainder(x, s); }, true),
      sc("floor_divide_s", [](T x, const at::Scalar& s) { return at::floor_divide(x, s); }, true),
      sc("pow_s", [](T x, const at::Scalar& s) { return at::pow(x, s); }), sc("eq_s", [](T x, const at::Scalar& s) { return x == s; }),
      sc("lt_s", [](T x, const at::Scalar& s) { return x < s; }), sc("ge_s", [](T x, const at::Scalar& s) { return x >= s; }),
      sc("clamp_s", [](T x, const at::Scalar& s) { return x.clamp(s, 5); }), sc("clamp_min_s", [](T x, const at::Scalar& s) { return x.clamp_min(s); }),
      sc("clamp_max_s", [](T x, const at::Scalar& s) { return x.clamp_max(s); }),
      sc("left_shift_s", [](T x, const at::Scalar& s) { return at::bitwise_left_shift(x, s); }),
      sc("right_shift_s", [](T x, const at::Scalar& s) { return at::bitwise_right_shift(x, s); }),
      sc("bitwise_and_s", [](T x, const at::Scalar& s) { return at::bitwise_and(x, s); }),
      sc("full_like", [](T x, const at::Scalar& s) { return at::full_like(x, s); }),
      sc("masked_fill_s", [](T x, const at::Scalar& s) { return x.masked_fill(x > 0, s); }),
      OpInfo{"to", Kind::kCast, [](const Step& s, Pool& p) { return p[s.a].to(s.dtype); }},
      red("sum", [](T x, const Step& s) { return x.sum(s.dim, s.keepdim); }, true),
      red("sum_all", [](T x, const Step&) { return x.sum(); }, true),
      red("mean", [](T x, const Step& s) { return x.mean(s.dim, s.keepdim); }, true),
      red("prod", [](T x, const Step& s) { return x.prod(s.dim, s.keepdim); }, true),
      red("amax", [](T x, const Step& s) { return x.amax(s.dim, s.keepdim) + 0; }, false),  // + 0: as maximum's
      red("amin", [](T x, const Step& s) { return x.amin(s.dim, s.keepdim) + 0; }, false),
      red("max_values", [](T x, const Step& s) { return std::get<0>(x.max(s.dim, s.keepdim)) + 0; }, false),
      red("max_indices", [](T x, const Step& s) { return std::get<1>(x.max(s.dim, s.keepdim)); }, false),
      red("min_indices", [](T x, const Step& s) { return std::get<1>(x.min(s.dim, s.keepdim)); }, false),
      red("max_all", [](T x, const Step&) { return x.max() + 0; }, false),
      red("argmax", [](T x, const Step& s) { return x.argmax(s.dim, s.keepdim); }, false),
      red("argmin", [](T x, const Step& s) { return x.argmin(s.dim, s.keepdim); }, false),
      red("var", [](T x, const Step& s) { return at::var(x, at::IntArrayRef{s.dim}, at::Scalar(s.flag ? 1 : 0), s.keepdim); }, true),
      red("std", [](T x, const Step& s) { return x.std(s.dim, s.flag, s.keepdim); }, true),
      red("logsumexp", [](T x, const Step& s) { return at::logsumexp(x, s.dim, s.keepdim); }, true),
      red("any", [](T x, const Step& s) { return x.any(s.dim, s.keepdim); }, false),
      red("all", [](T x, const Step& s) { return x.all(s.dim, s.keepdim); }, false),
      red("softmax", [](T x, const Step& s) { return at::softmax(x, s.dim); }, true),
      red("log_softmax", [](T x, const Step& s) { return at::log_softmax(x, s.dim); }, true),
      view("transpose", [](T x, const Step& s) { return x.transpose(s.dim, s.dim2); }),
      view("permute", [](T x, const Step& s) { return x.permute(s.ints); }),
      view("slice", [](T x, const Step& s) { return x.slice(s.dim, s.start, s.start + s.length, s.dim2); }),
      view("narrow", [](T x, const Step& s) { return x.narrow(s.dim, s.start, s.length); }),
      view("select", [](T x, const Step& s) { return x.select(s.dim, s.start); }),
      view("unsqueeze", [](T x, const Step& s) { return x.unsqueeze(s.dim); }),
      view("squeeze", [](T x, const Step& s) { return x.squeeze(s.dim); }),
      view("reshape", [](T x, const Step& s) { return x.reshape(s.ints); }),
      view("expand", [](T x, const Step& s) { return x.expand(s.ints); }),
      view("split", [](T x, const Step& s) { return x.split(std::max<int64_t>(1, s.length), s.dim).at(s.start); }),
      view("unbind", [](T x, const Step& s) { return x.unbind(s.dim).at(s.start); }),
      view("pad", [](T x, const Step& s) { return at::constant_pad_nd(x, {s.start, s.length}, s.scalar); }),
      OpInfo{"cat", Kind::kView, [](const Step& s, Pool& p) { return at::cat({p[s.a], p[s.b]}, s.dim); }},
      OpInfo{"stack", Kind::kView, [](const Step& s, Pool& p) { return at::stack({p[s.a], p[s.b]}, s.dim); }},
      OpInfo{"max_pool2d", Kind::kView, [](const Step& s, Pool& p) {
               const int64_t kh = 1 + s.start, kw = 1 + s.length;  // windows of 1 to 3, padding up to half of them
               return at::max_pool2d(p[s.a], {kh, kw}, {1 + s.length % 2, 1 + s.start % 2}, {s.flag ? kh / 2 : 0, kw / 2}, {1, 1}, s.keepdim);
             }},
      OpInfo{"upsample_nearest2d", Kind::kView, [](const Step& s, Pool& p) {
               const at::Tensor x = p[s.a].dim() == 3 ? p[s.a].unsqueeze(0) : p[s.a];
               const int64_t factor = s.start == 2 ? 3 : 1 + s.start;  // 3: ATen's float formula, run as an extern call
               return at::upsample_nearest2d(x, {x.size(2) * factor, x.size(3) * (s.flag ? factor : 1)});
             }},
      OpInfo{"index_select", Kind::kIndex, [](const Step& s, Pool& p) {
               const at::Tensor& x = p[s.a];
               const int64_t n = x.size(s.dim);
               const at::Tensor i = at::remainder(at::arange(s.start, s.start + s.length, at::kLong) * 7, std::max<int64_t>(n, 1));
               return x.index_select(s.dim, s.flag ? i.flip(0) : i);
             }},
      OpInfo{"gather", Kind::kIndex, [](const Step& s, Pool& p) {
               const at::Tensor& x = p[s.a];
               const int64_t n = std::max<int64_t>(x.size(s.dim), 1);
               const at::Tensor i = at::remainder(at::arange(x.numel(), at::kLong).view(x.sizes()) * 3 + s.start, n);
               return x.gather(s.dim, i);
             }},
      OpInfo{"embedding", Kind::kIndex, [](const Step& s, Pool& p) {
               const at::Tensor& x = p[s.a];
               const at::Tensor i = at::remainder(at::arange(s.length, at::kLong) * 5 + s.start, std::max<int64_t>(x.size(0), 1));
               return at::embedding(x, i.view({-1, 1}));
             }},
      OpInfo{"arange", Kind::kFactory, [](const Step& s, Pool& p) { return p[s.a] + at::arange(p[s.a].size(-1), s.dtype); }},
      OpInfo{"full", Kind::kFactory, [](const Step& s, Pool& p) { return at::full(p[s.a].sizes(), scalar_of(s), s.dtype); }},
      OpInfo{"zeros_like", Kind::kFactory, [](const Step&, Pool& p) { return at::zeros_like(p[0]) + p[0]; }},
      OpInfo{"ones_like", Kind::kFactory, [](const Step& s, Pool& p) { return at::ones_like(p[s.a], s.dtype) * p[s.a]; }},
      inplace("add_", [](const at::Tensor& t, const Step& s, const Pool& p) { t.add_(p[s.b]); }),
      inplace("mul_", [](const at::Tensor& t, const Step& s, const Pool& p) { t.mul_(p[s.b]); }),
      inplace("sub_s_", [](const at::Tensor& t, const Step& s, const Pool&) { t.sub_(scalar_of(s)); }),
      inplace("div_", [](const at::Tensor& t, const Step& s, const Pool& p) { t.div_(p[s.b]); }),
      inplace("neg_", [](const at::Tensor& t, const Step&, const Pool&) { t.neg_(); }),
      inplace("abs_", [](const at::Tensor& t, const Step&, const Pool&) { t.abs_(); }),
      inplace("clamp_", [](const at::Tensor& t, const Step& s, const Pool&) { t.clamp_(scalar_of(s)); }),
      inplace("fill_", [](const at::Tensor& t, const Step& s, const Pool&) { t.fill_(scalar_of(s)); }),
      inplace("zero_", [](const at::Tensor& t, const Step&, const Pool&) { t.zero_(); }),
      inplace("copy_", [](const at::Tensor& t, const Step& s, const Pool& p) { t.copy_(p[s.b]); }),
      inplace("masked_fill_", [](const at::Tensor& t, const Step& s, const Pool& p) { t.masked_fill_(p[s.b].to(at::kBool), scalar_of(s)); }),
      inplace("index_fill_", [](const at::Tensor& t, const Step& s, const Pool&) {
        t.index_fill_(s.dim, at::full({1}, s.start, at::kLong), scalar_of(s));
      }),
      inplace("relu_", [](const at::Tensor& t, const Step&, const Pool&) { t.relu_(); }),
      inplace("remainder_", [](const at::Tensor& t, const Step& s, const Pool& p) { t.remainder_(p[s.b]); }),
      inplace("left_shift_", [](const at::Tensor& t, const Step& s, const Pool& p) { t.bitwise_left_shift_(p[s.b]); }),
  };
  return table;
}

// ---- values -----------------------------------------------------------------------------------------

inline std::vector<double> edge_values(ScalarType t) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  switch (t) {
    case at::kFloat: return {0.0, -0.0, 1.0, -1.0, inf, -inf, nan, 1e-40, -3e-42, 1e30, -3e38, 3.4028234663852886e38, 1.1754943508222875e-38,
                             0.1, 0.3, -0.5, 2.5, 7.0, -7.0, 1e10, 3e9, -3e9, 300.0, -129.5, 65536 * 3 + 7.0, 1e-3, 1e19, 0.7};
    case at::kDouble: return {0.0, -0.0, 1.0, -1.0, inf, -inf, nan, 5e-324, -1e-310, 1e300, -1.7976931348623157e308, 1e30, 0.1,
                              0.3, -0.5, 2.5, 7.0, -7.0, 1e10, 3000000005.0, -3e9, 300.0, 9.2233720368547758e18, 1e19, 0.7, 1e-3};
    case at::kHalf: return {0.0, -0.0, 1.0, -1.0, inf, -inf, nan, 6e-8, -1e-6, 65504.0, -65504.0, 6e4, 0.1, 0.3, -0.5, 2.5, 7.0,
                            -7.0, 300.0, -129.5, 1e-3, 0.7, 1000.0};
    case at::kBFloat16: return {0.0, -0.0, 1.0, -1.0, inf, -inf, nan, 1e-40, -1e-39, 3e38, -1e30, 0.1, 0.3, -0.5, 2.5, 7.0, -7.0,
                                1e10, 3e9, 300.0, -129.5, 1e-3, 0.7};
    case at::kChar: return {0, 1, -1, 127, -128, 126, -127, 7, -7, 8, 3, 64, -64};
    case at::kByte: return {0, 1, 255, 254, 128, 127, 7, 8, 3, 64};
    case at::kShort: return {0, 1, -1, 32767, -32768, 7, -7, 15, 16, 17, 256, -300};
    case at::kInt: return {0, 1, -1, 2147483647, -2147483648.0, 7, -7, 31, 32, 33, 65536, -1000000};
    case at::kLong: return {0, 1, -1, 9.2233720368547758e18, -9.2233720368547758e18, 7, -7, 63, 64, 65, 4294967296.0, -1e12};
    default: return {0, 1};
  }
}

// A tensor of `sizes` and dtype t, a third of its elements edge values, the rest small random numbers.
inline at::Tensor fill(at::IntArrayRef sizes, ScalarType t, std::mt19937& rng) {
  const int64_t n = c10::multiply_integers(sizes);
  std::vector<double> v(n);
  const auto edges = edge_values(t);
  std::uniform_real_distribution<double> unit(0, 1);
  for (auto& x : v) {
    if (t == at::kBool) x = unit(rng) < 0.5;
    else if (unit(rng) < 0.35) x = edges[std::uniform_int_distribution<size_t>(0, edges.size() - 1)(rng)];
    else if (c10::isFloatingType(t)) x = std::round((unit(rng) * 8 - 4) * 64) / 64;  // exact in every float dtype
    else x = std::uniform_int_distribution<int>(t == at::kByte ? 0 : -9, 9)(rng);
  }
  if (t == at::kLong) {  // int64 extremes do not survive a trip through double
    std::vector<int64_t> w(n);
    for (int64_t i = 0; i < n; ++i)
      w[i] = v[i] >= 9.2e18 ? std::numeric_limits<int64_t>::max() : v[i] <= -9.2e18 ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(v[i]);
    return at::tensor(w, at::kLong).view(sizes);
  }
  return at::tensor(v, at::kDouble).to(t).view(sizes);
}

// The arguments of a program for value set `which` (0: the first, 1: the second), laid out as described.
inline std::vector<at::Tensor> materialize(const Program& p, int which) {
  std::mt19937 rng(p.seed * 2 + which + 12345);
  std::vector<at::Tensor> args;
  for (const auto& in : p.inputs) {
    at::Tensor t;
    switch (in.layout) {
      case Layout::kContiguous: t = fill(in.sizes, in.dtype, rng); break;
      case Layout::kTransposed: {
        Shape s = in.sizes;
        std::reverse(s.begin(), s.end());
        std::vector<int64_t> order(s.size());
        std::iota(order.rbegin(), order.rend(), 0);
        t = fill(s, in.dtype, rng).permute(order);
        break;
      }
      case Layout::kSliced: {
        Shape s = in.sizes;
        s[in.dim] = in.offset + s[in.dim] * in.step + 1;
        t = fill(s, in.dtype, rng).slice(in.dim, in.offset, in.offset + in.sizes[in.dim] * in.step, in.step);
        break;
      }
      case Layout::kExpanded: {
        Shape s = in.sizes;
        s[in.dim] = 1;
        t = fill(s, in.dtype, rng).expand(in.sizes);
        break;
      }
      case Layout::kOverlapping: t = args[in.of].flatten().slice(0, in.offset, in.offset + c10::multiply_integers(in.sizes)).view(in.sizes); break;
    }
    args.push_back(t);
  }
  return args;
}

// The relative spacing of floats of dtype t (one ulp at 1).
inline double epsilon_of(ScalarType t) {
  switch (t) {
    case at::kDouble: return std::numeric_limits<double>::epsilon();
    case at::kHalf: return 1.0 / 1024;
    case at::kBFloat16: return 1.0 / 128;
    default: return std::numeric_limits<float>::epsilon();
  }
}

// The ways a result may round differently, for interpret's `nudge` (0: none; odd: up, even: down):
// every element one ulp, alternate elements, or only the elements of eager's scalar tail; or subnormal
// results flushed to zero. Eager's own results depend on an element's position: its CPU loops run
// vectors of 64 bytes (AVX-512; 32 with AVX2), two at a time, and a scalar loop over what is left, and
// the two may round the same value apart (then two equal values differ). Some of its vectorized
// functions (Sleef's log1p) return 0 for a subnormal argument.
constexpr int kNudges = 10;

inline double smallest_normal(ScalarType t) {
  switch (t) {
    case at::kDouble: return std::numeric_limits<double>::min();
    case at::kHalf: return 6.103515625e-05;
    default: return std::numeric_limits<float>::min();
  }
}

// The factor moving each element of t by about one ulp the way `nudge` says.
inline at::Tensor nudge_factor(const at::Tensor& t, int nudge) {
  const double step = (nudge % 2 == 1 ? 1 : -1) * epsilon_of(t.scalar_type());
  const int64_t n = t.numel();
  const at::Tensor position = at::arange(n, at::kLong);
  at::Tensor sign = at::ones({n}, at::kDouble);
  const int kind = (nudge - 1) / 2;
  if (kind == 1) sign = 1 - 2 * (position % 2).to(at::kDouble);
  if (kind == 2 || kind == 3) {
    const int64_t block = (kind == 2 ? 128 : 64) / static_cast<int64_t>(t.element_size());
    sign = (position >= n - n % block).to(at::kDouble);
  }
  if (kind == 4) return (t.abs() >= smallest_normal(t.scalar_type())).to(t.scalar_type());
  return (1 + step * sign).to(t.scalar_type()).view(t.sizes());
}

// nudge != 0 moves each inexact op's result by about an ulp (nudge_factor): the program eager would run
// if its functions rounded otherwise, which shows how much a last-bit difference moves the results.
inline std::vector<at::Tensor> interpret(const Program& p, const std::vector<at::Tensor>& args, int nudge = 0) {
  Pool pool(args.begin(), args.end());
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Step& s = p.steps[k];
    pool.push_back(ops()[s.op].run(s, pool));
    if (nudge == 0 || k >= p.rounds.size() || !p.rounds[k]) continue;
    const at::Tensor factor = nudge_factor(pool.back(), nudge);
    if (ops()[s.op].kind == Kind::kInplace) pool.back().mul_(factor);  // every alias of the target sees it
    else pool.back() = pool.back() * factor;
  }
  std::vector<at::Tensor> out;
  for (int i : p.outputs) out.push_back(pool[i]);
  return out;
}

inline std::string to_string(const Program& p) {
  std::string text = fmt::format("fuzz program of seed {} (replay: JITC_FUZZ_SEED={})\n", p.seed, p.seed);
  const char* layouts[] = {"contiguous", "transposed", "sliced", "expanded", "overlapping"};
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const auto& in = p.inputs[i];
    text += fmt::format("  t{} = input {} {} {} (dim {}, offset {}, step {}, of {})\n", i, c10::toString(in.dtype), c10::str(in.sizes),
                        layouts[static_cast<int>(in.layout)], in.dim, in.offset, in.step, in.of);
  }
  int t = static_cast<int>(p.inputs.size());
  for (const auto& s : p.steps)
    text += fmt::format("  t{} = {}(t{}, t{}; dim {} dim2 {} start {} length {} keepdim {} flag {} scalar {}{} dtype {} ints {})\n", t++,
                        ops()[s.op].name, s.a, s.b, s.dim, s.dim2, s.start, s.length, s.keepdim, s.flag, s.scalar,
                        s.integral_scalar ? " (int)" : "", c10::toString(s.dtype), c10::str(s.ints));
  text += "  return";
  for (int i : p.outputs) text += fmt::format(" t{}", i);
  if (p.raises_on_second) text += "  (eager raises on the second value set)";
  return text;
}

// ---- the generator -------------------------------------------------------------------------------------

// Ops whose float results may differ from eager's in the last bits (libm vs ATen's vectorized functions,
// FMAs ATen's kernels use, reassociated reductions): their results are "inexact".
// sqrt is one of them: eager's float sqrt goes through MKL's vector library, which is not correctly rounded.
inline bool inexact_op(const std::string& n) {
  static const std::vector<std::string> names = {
      "sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
      "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "sigmoid", "gelu", "gelu_tanh", "silu", "mish", "softplus",
      "hardswish", "hardsigmoid", "elu", "pow", "pow_s", "pow_half", "pow_m1", "pow_m2", "atan2", "add_alpha", "addcmul",
      "addcdiv", "lerp", "div_s", "sum", "sum_all", "mean", "prod", "var", "std", "logsumexp", "softmax", "log_softmax"};
  return std::find(names.begin(), names.end(), n) != names.end();
}

// Ops that are discontinuous (a last-bit difference in the operand can change the result entirely:
// rounding, comparisons, modular ops, casts to integers, arg reductions) or ill-conditioned (sin of a
// huge value): they take only exact float operands.
inline bool discontinuous_op(const std::string& n) {
  static const std::vector<std::string> names = {
      "floor", "ceil", "round", "trunc", "frac", "sign", "sgn", "sin", "cos", "tan", "eq", "ne", "lt", "le", "gt", "ge", "eq_s",
      "lt_s", "ge_s", "where", "where_bool", "masked_fill", "masked_fill_s", "to", "div_trunc", "div_floor", "floor_divide",
      "floor_divide_s", "remainder", "remainder_s", "fmod", "fmod_s", "remainder_", "logical_and", "logical_or",
      "logical_xor", "logical_not", "isnan", "isinf", "isfinite", "argmax", "argmin", "max_indices", "min_indices", "any", "all", "copy_", "masked_fill_"};
  return std::find(names.begin(), names.end(), n) != names.end();
}

class Generator : RandomChoices {
 public:
  explicit Generator(uint32_t seed) : RandomChoices(seed) { program_.seed = seed; }

  Program generate() {
    make_inputs();
    const int target = uniform(1, 8);
    for (int attempt = 0; attempt < 30 * target && static_cast<int>(program_.steps.size()) < target && !program_.raises_on_second; ++attempt)
      try_step();
    const int n_inputs = static_cast<int>(program_.inputs.size());
    const int last = static_cast<int>(pools_[0].size()) - 1;
    program_.outputs.push_back(last);
    if (last > n_inputs && chance(0.4)) program_.outputs.push_back(uniform(n_inputs, last - 1));
    return program_;
  }

 private:

  Shape random_shape() {
    Shape s(uniform(0, 3));
    for (auto& d : s) d = chance(0.15) ? uniform(0, 1) : uniform(2, 7);
    return s;
  }

  ScalarType random_dtype() { return chance(0.3) ? at::kFloat : pick(kDtypes); }

  void make_inputs() {
    const int n = uniform(1, 3);
    Shape base = random_shape();
    // Now and then a long last dim: a row of several tiles or threads' chunks, beside which values of
    // fewer elements (a 0-dim or a broadcast argument updated in place) are computed once per tile.
    if (!base.empty() && chance(0.05)) base.back() = uniform(3000, 5000);
    for (int i = 0; i < n; ++i) {
      Input in;
      in.dtype = i > 0 && chance(0.4) ? program_.inputs[0].dtype : random_dtype();
      in.sizes = i == 0 || chance(0.5) ? base : random_shape();
      if (i > 0 && chance(0.3) && !in.sizes.empty()) in.sizes[uniform(0, static_cast<int>(in.sizes.size()) - 1)] = 1;
      const int64_t rank = static_cast<int64_t>(in.sizes.size());
      const int r = uniform(0, 9);
      if (r < 4 || rank == 0) {
        in.layout = Layout::kContiguous;
      } else if (r < 5 && rank >= 2) {
        in.layout = Layout::kTransposed;
      } else if (r < 7) {
        in.layout = Layout::kSliced;
        in.dim = uniform(0, static_cast<int>(rank) - 1);
        in.offset = uniform(0, 3);
        in.step = uniform(1, 2);
      } else if (r < 9) {
        in.layout = Layout::kExpanded;
        in.dim = uniform(0, static_cast<int>(rank) - 1);
      } else {
        std::vector<int> bigger;  // an earlier argument with enough contiguous elements to hold this one
        const int64_t numel = c10::multiply_integers(in.sizes);
        for (int j = 0; j < i; ++j)
          if (program_.inputs[j].layout == Layout::kContiguous && program_.inputs[j].dtype == in.dtype &&
              c10::multiply_integers(program_.inputs[j].sizes) > numel)
            bigger.push_back(j);
        if (!bigger.empty()) {
          in.layout = Layout::kOverlapping;
          in.of = pick(bigger);
          in.offset = uniform(0, static_cast<int>(c10::multiply_integers(program_.inputs[in.of].sizes) - numel));
        }
      }
      program_.inputs.push_back(in);
    }
    pools_[0] = materialize(program_, 0);
    pools_[1] = materialize(program_, 1);
    exact_.assign(pools_[0].size(), true);
    program_.coarsest.assign(pools_[0].size(), at::kDouble);
  }

  static bool rounds(const Step& s, const at::Tensor& result) {
    return inexact_op(ops()[s.op].name) && c10::isFloatingType(result.scalar_type());
  }

  static ScalarType coarser(ScalarType x, ScalarType y) {
    if (x == at::kBFloat16 || y == at::kBFloat16) return at::kBFloat16;
    return x == at::kHalf || y == at::kHalf ? at::kHalf : at::kDouble;
  }

  // A step's coarsest rounding (Program::coarsest): its operands', and its own where its result is an
  // inexact half or bfloat16 value.
  ScalarType coarsest_of(const Step& s, bool exact, ScalarType result) const {
    if (exact) return at::kDouble;
    const Kind kind = ops()[s.op].kind;
    const std::string name = ops()[s.op].name;
    const bool uses_b = kind == Kind::kBinary || kind == Kind::kInplace || name == "cat" || name == "stack";
    ScalarType c = program_.coarsest[s.a];
    if (uses_b) c = coarser(c, program_.coarsest[s.b]);
    return result == at::kHalf || result == at::kBFloat16 ? coarser(c, result) : c;
  }

  bool inexact_float(int i) const { return !exact_[i] && c10::isFloatingType(pools_[0][i].scalar_type()); }

  // Whether the step's operands suit it, and the exactness of its result (see inexact_op).
  bool exactness(const Step& s, bool* exact) const {
    const std::string name = ops()[s.op].name;
    const Kind kind = ops()[s.op].kind;
    const bool uses_b = kind == Kind::kBinary || kind == Kind::kInplace || name == "cat" || name == "stack";
    const bool inexact_in = inexact_float(s.a) || (uses_b && inexact_float(s.b));
    if (inexact_in && discontinuous_op(name)) return false;
    *exact = !inexact_op(name) && !inexact_in;
    return true;
  }

  int operand() {
    const int n = static_cast<int>(pools_[0].size());
    return chance(0.55) ? n - 1 : uniform(0, n - 1);
  }

  static bool broadcastable(at::IntArrayRef x, at::IntArrayRef y) {
    for (size_t i = 1; i <= std::min(x.size(), y.size()); ++i) {
      const int64_t a = x[x.size() - i], b = y[y.size() - i];
      if (a != b && a != 1 && b != 1) return false;
    }
    return true;
  }

  int partner(const at::Tensor& x) {
    std::vector<int> partners;
    for (int i = 0; i < static_cast<int>(pools_[0].size()); ++i)
      if (broadcastable(x.sizes(), pools_[0][i].sizes())) partners.push_back(i);
    return pick(partners);
  }

  double random_scalar(Step& s, ScalarType t) {
    const std::vector<double> values = {0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 0.1, -0.3, 3.0, 7.0, -7.0, 1e10, 65504.0, 1e-40, 31.0, 64.0,
                                        -129.0, 255.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};
    const double v = pick(values);
    const bool integral = std::trunc(v) == v && std::abs(v) < 1e9 && !(v == 0 && std::signbit(v));
    s.integral_scalar = integral && chance(c10::isFloatingType(t) ? 0.3 : 0.8);
    return v;
  }

  int64_t random_dim(int64_t rank) {
    const int64_t d = uniform(0, static_cast<int>(rank) - 1);
    return chance(0.3) ? d - rank : d;
  }

  bool build(Step& s) {
    const auto& table = ops();
    s.op = uniform(0, static_cast<int>(table.size()) - 1);
    const OpInfo& op = table[s.op];
    s.a = operand();
    const at::Tensor& x = pools_[0][s.a];
    const int64_t rank = x.dim();
    s.b = partner(x);
    s.dtype = pick(kDtypes);
    s.scalar = random_scalar(s, x.scalar_type());
    const std::string name = op.name;
    switch (op.kind) {
      case Kind::kUnary:
      case Kind::kBinary:
      case Kind::kScalar:
      case Kind::kCast:
      case Kind::kFactory:
        if (name == "arange" && rank == 0) return false;
        return true;
      case Kind::kReduction:
        if (name == "sum_all" || name == "max_all") return true;
        if (rank == 0) return false;
        s.dim = random_dim(rank);
        s.keepdim = chance(0.5);
        s.flag = chance(0.5);
        return true;
      case Kind::kIndex:
        if (rank == 0) return false;
        s.dim = random_dim(rank);
        s.start = uniform(0, 5);
        s.length = uniform(0, 6);
        s.flag = chance(0.5);
        return name != "embedding" || rank == 2;
      case Kind::kInplace: {
        // the target: an argument, a view of one, or an intermediate; most often an argument or its view
        std::vector<int> targets;
        for (int i = 0; i < static_cast<int>(pools_[0].size()); ++i)
          if (i < static_cast<int>(program_.inputs.size()) || pools_[0][i].is_view()) targets.push_back(i);
        if (!targets.empty() && chance(0.7)) s.a = pick(targets);
        // Open (issue 23): fill_/index_fill_/masked_fill_ into an argument with internal overlap (an
        // expanded one) succeed in eager and raise in the compiled call: functionalization writes the
        // argument back with copy_, which rejects internal overlap. JITC_FUZZ_OVERLAPPING_WRITES=1 fuzzes them.
        if (!std::getenv("JITC_FUZZ_OVERLAPPING_WRITES") && at::has_internal_overlap(pools_[0][s.a]) != at::MemOverlap::No) return false;
        s.b = partner(pools_[0][s.a]);
        if (pools_[0][s.a].dim() == 0 && name == "index_fill_") return false;
        s.dim = pools_[0][s.a].dim() ? random_dim(pools_[0][s.a].dim()) : 0;
        s.start = pools_[0][s.a].dim() ? uniform(0, std::max<int>(0, static_cast<int>(pools_[0][s.a].size(s.dim)) - 1)) : 0;
        return true;
      }
      case Kind::kView:
        break;
    }
    if (name == "max_pool2d" || name == "upsample_nearest2d") {
      s.start = uniform(0, 2);
      s.length = uniform(0, 2);
      s.flag = chance(0.5);
      s.keepdim = chance(0.3);  // max_pool2d's ceil_mode
      return rank >= 3 && at::isFloatingType(x.scalar_type());
    }
    if (name == "cat" || name == "stack") {
      if (rank == 0 && name == "cat") return false;
      std::vector<int> same;
      for (int i = 0; i < static_cast<int>(pools_[0].size()); ++i)
        if (pools_[0][i].dim() == rank) same.push_back(i);
      s.b = pick(same);
      s.dim = name == "cat" ? random_dim(rank) : uniform(0, static_cast<int>(rank));
      return true;
    }
    if (name == "unsqueeze") {
      s.dim = uniform(0, static_cast<int>(rank));
      return rank < 4;
    }
    if (name == "pad") {
      s.start = uniform(-1, 2);
      s.length = uniform(-1, 2);
      return rank > 0;
    }
    if (name == "reshape") {
      const int64_t n = x.numel();
      if (n == 0 || chance(0.3)) s.ints = {-1};
      else {
        std::vector<int64_t> divisors;
        for (int64_t d = 1; d <= n; ++d)
          if (n % d == 0) divisors.push_back(d);
        const int64_t p = pick(divisors);
        s.ints = {p, chance(0.5) ? -1 : n / p};
      }
      return true;
    }
    if (name == "permute") {
      s.ints.resize(rank);
      std::iota(s.ints.begin(), s.ints.end(), 0);
      std::shuffle(s.ints.begin(), s.ints.end(), rng_);
      return true;
    }
    if (name == "expand") {
      s.ints = x.sizes().vec();
      if (chance(0.3)) s.ints.insert(s.ints.begin(), uniform(1, 3));
      for (size_t d = 0; d < s.ints.size(); ++d)
        if (s.ints[d] == 1 && chance(0.7)) s.ints[d] = uniform(0, 5);
      return s.ints.size() <= 4;
    }
    if (rank == 0) return false;
    s.dim = random_dim(rank);
    s.dim2 = name == "transpose" ? random_dim(rank) : uniform(1, 3);
    const int size = static_cast<int>(x.size(s.dim));
    s.start = uniform(0, std::max(0, size - 1));
    s.length = uniform(0, std::max(0, size - static_cast<int>(s.start)));
    if (name == "select" || name == "unbind") return size > 0;
    return true;
  }

  // Whether operand x of an order-dependent float reduction or a modular op holds values for which the
  // result is determined (see the header's comment).
  static bool moderate(const at::Tensor& x, double limit) {
    if (!c10::isFloatingType(x.scalar_type()) || x.numel() == 0) return true;
    const auto d = x.to(at::kDouble);
    return !(d.isfinite() & (d.abs() > limit)).any().item<bool>();
  }
  // (A finite dividend over a denormal divisor counts: its quotient may be infinite even in double.)
  static bool small_quotients(const at::Tensor& a, const at::Tensor& b) {
    if (!c10::isFloatingType(at::result_type(a, b)) || a.numel() == 0 || b.numel() == 0) return true;
    const auto da = a.to(at::kDouble), db = b.to(at::kDouble);
    const auto q = (da / db).abs();
    return !(da.isfinite() & db.isfinite() & (db != 0) & (q >= 1048576)).any().item<bool>();
  }
  // bfloat16 counts up to 4x the float minimum: eager's bfloat16 erf of the float minimum is 0 (a
  // subnormal intermediate flushed in its vectorized loop; its float erf gives 1.3264e-38, as jitc does
  // for both: fuzzer seed 652189). jitc keeps IEEE results there rather than copy the flush.
  static bool has_subnormals(const at::Tensor& x) {
    if (!c10::isFloatingType(x.scalar_type()) || x.numel() == 0) return false;
    const auto a = x.to(at::kDouble).abs();
    const double normal = x.scalar_type() == at::kDouble     ? std::numeric_limits<double>::min()
                          : x.scalar_type() == at::kHalf     ? 6.103515625e-05
                          : x.scalar_type() == at::kBFloat16 ? 4 * std::numeric_limits<float>::min()
                                                             : std::numeric_limits<float>::min();
    return ((a > 0) & (a < normal)).any().item<bool>();
  }
  // Eager's gelu depends on an element's position (vectorized loop or scalar tail) for some operands:
  // infinities (NaN vectorized, inf scalar), values near the float maximum (its vectorized loop overflows
  // where the scalar one does not), and the far negative tail, where 1 + erf(x) cancels and its
  // vectorized erf (6e-7 absolute error) and the scalar libm erf differ by more than 1e-5 relative below
  // x = -2.37 (measured on 4001 points of [-4, 0]).
  static bool gelu_determined(const at::Tensor& x) {
    if (!c10::isFloatingType(x.scalar_type()) || x.numel() == 0) return true;
    const auto d = x.to(at::kDouble);
    const double huge = x.scalar_type() == at::kDouble ? 1e307 : 1e37;
    return !(d.isinf() | (d.abs() > huge) | (d < -2)).any().item<bool>();
  }

  bool acceptable(const Step& s, const Pool& pool) {
    const OpInfo& op = ops()[s.op];
    const at::Tensor& x = pool[s.a];
    const std::string name = op.name;
    if (name.rfind("gelu", 0) == 0 && !gelu_determined(x)) return false;
    // Eager's vectorized functions (Sleef) may flush a subnormal argument to zero, its scalar loop not
    if (op.kind == Kind::kUnary && inexact_op(name) && has_subnormals(x)) return false;
    if (op.kind == Kind::kBinary && c10::isReducedFloatingType(at::result_type(x, pool[s.b])) &&
        (name == "addcmul" || name == "addcdiv" || name == "div_trunc"))
      return false;  // eager's half and bfloat16 loops round these apart (vectorized: 1 / 0.1 trunc is 10, scalar 9)
    if (std::string(op.name) == "sinh" || std::string(op.name) == "cosh") {
      // eager's vectorized sinh and cosh overflow where exp(x) does, below their own overflow (89.4 in
      // float); integer operands too (their results are float)
      const double limit = x.scalar_type() == at::kDouble ? 709 : 88;
      return x.numel() == 0 || !(x.to(at::kDouble).abs() > limit & x.to(at::kDouble).isfinite()).any().item<bool>();
    }
    if (std::string(op.name) == "add_alpha") {
      // eager's half and bfloat16 x + 3 * y rounds 3 * y to the dtype in its scalar loop (inf past the
      // maximum), not in its vectorized one (one FMA in float)
      // nor does it round the product elsewhere (a cancellation then differs widely): not fuzzed there
      const ScalarType t = at::result_type(x, pool[s.b]);
      if (t == at::kHalf || t == at::kBFloat16) return false;
    }
    if (op.order_dependent) {
      const bool half = x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16;
      const std::string name = op.name;
      if (name == "prod") return moderate(x, 2) && x.numel() <= 64;
      return moderate(x, half ? 8 : 1000);
    }
    if (std::string(op.name) == "div_trunc") {
      // eager's own kernel traps (SIGFPE) on the int32 and int64 minimum divided by -1
      const at::Tensor& y = pool[s.b];
      const ScalarType t = at::result_type(x, y);
      if (t == at::kInt || t == at::kLong) {
        const int64_t lo = t == at::kInt ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
        if (x.numel() && y.numel() && ((x.to(at::kLong) == lo) & (y.to(at::kLong) == -1)).any().item<bool>()) return false;
      }
    }
    if (op.modular) return op.kind == Kind::kScalar ? small_quotients(x, at::scalar_tensor(scalar_of(s), at::kDouble)) : small_quotients(x, pool[s.b]);
    if (std::string(op.name) == "remainder_") return small_quotients(x, pool[s.b]);
    return true;
  }

  // Adds the step when eager accepts it on the first value set; a step eager raises on only for the
  // second value set ends the program (the compiled program must raise there too).
  bool try_step() {
    Step s;
    if (!build(s)) return false;
    bool exact = true;
    if (!exactness(s, &exact)) return false;
    at::Tensor t[2];
    Pool copies[2];
    for (int w = 0; w < 2; ++w) {
      // in-place steps mutate: try them on a copy of the pool first (the copy shares nothing with it)
      copies[w] = clone_pool(pools_[w], w);
      if (!acceptable(s, copies[w])) return false;
      try {
        t[w] = ops()[s.op].run(s, copies[w]);
      } catch (const std::exception&) {
        if (w == 0) return false;
        if (!chance(0.3)) return false;
        program_.steps.push_back(s);
        program_.raises_on_second = true;
        program_.coarsest.push_back(coarsest_of(s, exact, t[0].scalar_type()));
        program_.rounds.push_back(rounds(s, t[0]));
        pools_[0] = std::move(copies[0]);
        pools_[0].push_back(t[0]);
        return true;
      }
      if (t[w].dim() > 4 || t[w].numel() > 4096) return false;
    }
    program_.steps.push_back(s);
    for (int w = 0; w < 2; ++w) {
      pools_[w] = std::move(copies[w]);
      pools_[w].push_back(t[w]);
    }
    const bool int_result = !c10::isFloatingType(t[0].scalar_type());
    exact_.push_back(exact || int_result);
    program_.coarsest.push_back(coarsest_of(s, exact, t[0].scalar_type()));
    program_.rounds.push_back(rounds(s, t[0]));
    if (ops()[s.op].kind == Kind::kInplace && !exact && !int_result)  // the write reaches every alias of the target
      for (size_t i = 0; i < pools_[0].size(); ++i)
        if (pools_[0][i].is_alias_of(t[0])) {
          exact_[i] = false;
          program_.coarsest[i] = coarser(program_.coarsest[i], program_.coarsest.back());
        }
    return true;
  }

  // A copy of a pool with the same aliasing between its tensors: the arguments rebuilt, every step replayed.
  Pool clone_pool(const Pool&, int which) {
    Pool pool = materialize(program_, which);
    for (const auto& s : program_.steps) pool.push_back(ops()[s.op].run(s, pool));
    return pool;
  }

  Program program_;
  Pool pools_[2];
  std::vector<bool> exact_;  // per pool entry: computed from the arguments by exactly rounded ops only
};

inline Program generate(uint32_t seed) { return Generator(seed).generate(); }

// ---- the comparison ------------------------------------------------------------------------------------

constexpr Tolerance kFloatChain{1e-4, 1e-4};
constexpr Tolerance kHalfChain{1e-2, 1e-2};
// An inexact value rounded to bfloat16 may land one ulp away from eager's (two correct float results on
// either side of a rounding boundary), and a square or a reciprocal square doubles that: two ulps at
// bfloat16's widest relative spacing (2^-7 each).
constexpr Tolerance kBFloat16Chain{1.5625e-2, 1e-2};

// The tolerance of a float result of dtype t whose chain rounded inexact values to `coarsest` at most.
inline Tolerance tolerance_for(ScalarType t, ScalarType coarsest) {
  if (t == at::kBFloat16 || coarsest == at::kBFloat16) return kBFloat16Chain;
  if (t == at::kHalf || coarsest == at::kHalf) return kHalfChain;
  return kFloatChain;
}

// "" when got matches want: same sizes, dtype and (where it matters) strides; integers and bools exactly;
// floats within tolerance with NaN, infinities and the sign of zeros exactly where eager has them.
// How far a last-bit difference moves a result: eager's results with every inexact op nudged about an
// ulp (interpret's nudge, each of kNudges ways), per result and per argument afterwards. A float element where
// jitc differs from eager by more than the tolerance is explained when the nudged results move it by at
// least an eighth as much (jitc's functions are within a few ulps of eager's: erf up to 6), or when a
// nudge alone turns it into an infinity or NaN or back (an overflow or a pole at that point).
constexpr double kUlpsApart = 8;

inline at::Tensor explained(const at::Tensor& g, const at::Tensor& w, const std::vector<at::Tensor>& nudged, double atol) {
  at::Tensor unstable = at::zeros_like(w, at::kBool), spread = at::zeros_like(w);
  for (const auto& nudged_one : nudged) {
    const at::Tensor n = nudged_one.to(at::kDouble);
    unstable = unstable | (at::isnan(n) != at::isnan(w)) | (at::isinf(n) != at::isinf(w));
    spread = at::maximum(spread, (n - w).abs().nan_to_num(0, 0, 0));
  }
  return unstable | ((g - w).abs() <= spread * kUlpsApart + atol);
}

inline std::string compare(const at::Tensor& got, const at::Tensor& want, ScalarType coarsest = at::kDouble,
                           const std::vector<at::Tensor>& nudged = {}) {
  if (got.sizes() != want.sizes()) return fmt::format("sizes {} vs eager {}", c10::str(got.sizes()), c10::str(want.sizes()));
  if (got.scalar_type() != want.scalar_type())
    return fmt::format("dtype {} vs eager {}", c10::toString(got.scalar_type()), c10::toString(want.scalar_type()));
  if (got.numel() == 0) return "";
  if (!c10::isFloatingType(want.scalar_type())) {
    if (at::equal(got, want)) return "";
    const auto wrong = at::nonzero((got != want).flatten()).flatten();
    const int64_t i = wrong[0].item<int64_t>();
    return fmt::format("{} elements differ, first at {}: {} vs eager {}", wrong.numel(), i, got.flatten()[i].item<double>(),
                       want.flatten()[i].item<double>());
  }
  const auto g = got.to(at::kDouble), w = want.to(at::kDouble);
  const Tolerance tol = tolerance_for(want.scalar_type(), coarsest);
  const auto close = at::isclose(g, w, tol.rtol, tol.atol, /*equal_nan=*/true);
  const auto zeros = (g == 0) & (w == 0);
  auto bad = (~close) | (zeros & (at::signbit(g) != at::signbit(w)));
  if (!bad.any().item<bool>()) return "";
  if (!nudged.empty()) bad = bad & ~explained(g, w, nudged, tol.atol);
  if (!bad.any().item<bool>()) return "";
  const auto wrong = at::nonzero(bad.flatten()).flatten();
  const int64_t i = wrong[0].item<int64_t>();
  return fmt::format("{} elements differ, first at {}: {} vs eager {}", wrong.numel(), i, g.flatten()[i].item<double>(),
                     w.flatten()[i].item<double>());
}

// What a call raised: "" if nothing, else the error's type and text.
template <class F>
std::string raised(F fn) {
  try {
    fn();
  } catch (const c10::Error& e) {
    return fmt::format("{}: {}", typeid(e).name(), e.what_without_backtrace());
  } catch (const std::exception& e) {
    return fmt::format("{}: {}", typeid(e).name(), e.what());
  }
  return "";
}

// Runs one program; "" when compiled and eager agree, else what differs.
inline std::string check(const Program& p, bool* ran_eagerly = nullptr) {
  auto fn = [p](const std::vector<at::Tensor>& xs) { return interpret(p, xs); };
  auto compiled = jitc::compile(fn);
  std::string failures;
  // eager's results with every inexact op nudged each way (interpret's nudge); run only where a result differs
  struct Nudged {
    const Program* p;
    int which = 0;
    std::vector<at::Tensor> out[kNudges], arguments[kNudges];
    bool ran = false, raised = false;  // a nudged run that raises explains nothing
    void run() {
      if (ran) return;
      ran = true;
      try {
        for (int k = 0; k < kNudges; ++k) arguments[k] = materialize(*p, which), out[k] = interpret(*p, arguments[k], k + 1);
      } catch (const std::exception&) {
        raised = true;
      }
    }
    std::vector<at::Tensor> result(size_t i) { return pick(out, i); }
    std::vector<at::Tensor> argument(size_t i) { return pick(arguments, i); }
    std::vector<at::Tensor> pick(const std::vector<at::Tensor>* runs, size_t i) {
      run();
      std::vector<at::Tensor> picked;
      for (int k = 0; k < kNudges && !raised; ++k) picked.push_back(runs[k].at(i));
      return picked;
    }
  };
  Nudged n{&p};
  auto compare_all = [&](const char* what, const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want,
                         const std::vector<at::Tensor>& got_args, const std::vector<at::Tensor>& want_args) {
    if (got.size() != want.size()) return failures += fmt::format("{}: {} results vs eager {}\n", what, got.size(), want.size()), void();
    for (size_t i = 0; i < got.size(); ++i)
      if (!compare(got[i], want[i], p.coarsest.at(p.outputs[i])).empty())
        if (auto d = compare(got[i], want[i], p.coarsest.at(p.outputs[i]), n.result(i)); !d.empty())
          failures += fmt::format("{}: result {}: {}\n", what, i, d);
    for (size_t i = 0; i < got_args.size(); ++i)
      if (!compare(got_args[i], want_args[i], p.coarsest.at(i)).empty())
        if (auto d = compare(got_args[i], want_args[i], p.coarsest.at(i), n.argument(i)); !d.empty())
          failures += fmt::format("{}: argument {} afterwards: {}\n", what, i, d);
  };
  compiled(materialize(p, 0));  // traces
  for (int which : {0, 1}) {
    const char* what = which == 0 ? "second call (compiled)" : "other values (compiled)";
    auto got_args = materialize(p, which), want_args = materialize(p, which);
    std::vector<at::Tensor> got, want;
    const std::string want_error = raised([&] { want = fn(want_args); });
    const std::string got_error = raised([&] { got = compiled(got_args); });
    if (want_error != got_error) {
      failures += fmt::format("{}: raised \"{}\", eager \"{}\"\n", what, got_error, want_error);
      continue;
    }
    n = Nudged{&p, which};
    if (want_error.empty()) compare_all(what, got, want, got_args, want_args);
  }
  // A graph jitc cannot compile (a write through expand or split, arguments that overlap) runs through
  // the eager backend with a warning: right, but not a test of the kernels; the caller counts them.
  if (ran_eagerly) *ran_eagerly = compiled.stats().programs_compiled == 0;
  return failures;
}

// The seeds to run: [first, end) from JITC_FUZZ_SEEDS=<a>:<b> (or <n> for 0..n-1), JITC_FUZZ_SEED=<s> for one,
// else 0..default_seeds-1.
inline std::pair<uint32_t, uint32_t> seed_range(uint32_t default_seeds) {
  if (const char* one = std::getenv("JITC_FUZZ_SEED")) {
    const auto s = static_cast<uint32_t>(std::strtoul(one, nullptr, 10));
    return {s, s + 1};
  }
  if (const char* range = std::getenv("JITC_FUZZ_SEEDS")) {
    const std::string r = range;
    const auto colon = r.find(':');
    if (colon == std::string::npos) return {0, static_cast<uint32_t>(std::stoul(r))};
    return {static_cast<uint32_t>(std::stoul(r.substr(0, colon))), static_cast<uint32_t>(std::stoul(r.substr(colon + 1)))};
  }
  return {0, default_seeds};
}

}  // namespace jitc::testing::edge_graphs
