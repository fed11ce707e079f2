// The op lists the parity tests run, on the CPU (test_ops.cpp) and on CUDA (test_cuda.cpp).
#pragma once
#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace jitc::testing {

using Unary = std::function<at::Tensor(const at::Tensor&)>;
using Binary = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;

inline const std::vector<c10::ScalarType> kAllDtypes = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kLong,
                                                 at::kInt,   at::kShort,  at::kChar, at::kByte,     at::kBool};

inline at::Tensor sample(at::IntArrayRef sizes, c10::ScalarType dtype, int seed) {
  at::manual_seed(seed);
  if (dtype == at::kBool) return at::rand(sizes) > 0.5;
  if (c10::isFloatingType(dtype)) return (at::randn(sizes) * 2).to(dtype);
  if (dtype == at::kByte) return at::randint(0, 12, sizes).to(dtype);
  return at::randint(-9, 10, sizes).to(dtype);
}

inline const std::vector<std::pair<const char*, Unary>>& unary_ops() {
  static const std::vector<std::pair<const char*, Unary>> ops = {
      {"neg", [](const at::Tensor& x) { return x.neg(); }},
      {"abs", [](const at::Tensor& x) { return x.abs(); }},
      {"exp", [](const at::Tensor& x) { return x.exp(); }},
      {"exp2", [](const at::Tensor& x) { return x.exp2(); }},
      {"expm1", [](const at::Tensor& x) { return x.expm1(); }},
      {"log", [](const at::Tensor& x) { return x.abs().log(); }},
      {"log2", [](const at::Tensor& x) { return x.abs().log2(); }},
      {"log10", [](const at::Tensor& x) { return x.abs().log10(); }},
      {"log1p", [](const at::Tensor& x) { return x.abs().log1p(); }},
      {"sqrt", [](const at::Tensor& x) { return x.abs().sqrt(); }},
      {"rsqrt", [](const at::Tensor& x) { return (x.abs() + 1).rsqrt(); }},
      {"sin", [](const at::Tensor& x) { return x.sin(); }},
      {"cos", [](const at::Tensor& x) { return x.cos(); }},
      {"tan", [](const at::Tensor& x) { return x.tan(); }},
      {"asin", [](const at::Tensor& x) { return (x * 0.1).asin(); }},
      {"acos", [](const at::Tensor& x) { return (x * 0.1).acos(); }},
      {"atan", [](const at::Tensor& x) { return x.atan(); }},
      {"sinh", [](const at::Tensor& x) { return x.sinh(); }},
      {"cosh", [](const at::Tensor& x) { return x.cosh(); }},
      {"tanh", [](const at::Tensor& x) { return x.tanh(); }},
      {"asinh", [](const at::Tensor& x) { return x.asinh(); }},
      {"acosh", [](const at::Tensor& x) { return (x.abs() + 1).acosh(); }},
      {"atanh", [](const at::Tensor& x) { return (x * 0.1).atanh(); }},
      {"erf", [](const at::Tensor& x) { return x.erf(); }},
      {"erfc", [](const at::Tensor& x) { return x.erfc(); }},
      {"floor", [](const at::Tensor& x) { return x.floor(); }},
      {"ceil", [](const at::Tensor& x) { return x.ceil(); }},
      {"round", [](const at::Tensor& x) { return (x * 2.5).round(); }},
      {"trunc", [](const at::Tensor& x) { return x.trunc(); }},
      {"frac", [](const at::Tensor& x) { return x.frac(); }},
      {"sign", [](const at::Tensor& x) { return x.sign(); }},
      {"reciprocal", [](const at::Tensor& x) { return (x.abs() + 1).reciprocal(); }},
      {"square", [](const at::Tensor& x) { return x.square(); }},
      {"sigmoid", [](const at::Tensor& x) { return x.sigmoid(); }},
      {"relu", [](const at::Tensor& x) { return x.relu(); }},
      {"gelu", [](const at::Tensor& x) { return at::gelu(x); }},
      {"gelu_tanh", [](const at::Tensor& x) { return at::gelu(x, "tanh"); }},
      {"silu", [](const at::Tensor& x) { return at::silu(x); }},
      {"softplus", [](const at::Tensor& x) { return at::softplus(x, 2.0, 3.0); }},
      {"hardswish", [](const at::Tensor& x) { return at::hardswish(x); }},
      {"hardsigmoid", [](const at::Tensor& x) { return at::hardsigmoid(x); }},
      {"leaky_relu", [](const at::Tensor& x) { return at::leaky_relu(x, 0.2); }},
      {"elu", [](const at::Tensor& x) { return at::elu(x, 0.7); }},
      {"mish", [](const at::Tensor& x) { return at::mish(x); }},
      {"hardtanh", [](const at::Tensor& x) { return at::hardtanh(x, -0.5, 0.5); }},
      {"relu6", [](const at::Tensor& x) { return at::relu6(x); }},
      {"clamp", [](const at::Tensor& x) { return x.clamp(-1, 2); }},
      {"clamp_min", [](const at::Tensor& x) { return x.clamp_min(0.5); }},
      {"pow2", [](const at::Tensor& x) { return x.pow(2); }},
      {"pow3", [](const at::Tensor& x) { return x.pow(3); }},
      {"pow_half", [](const at::Tensor& x) { return x.abs().pow(0.5); }},
      {"pow_1_7", [](const at::Tensor& x) { return x.abs().pow(1.7); }},
      {"isnan", [](const at::Tensor& x) { return x.isnan(); }},
      {"isinf", [](const at::Tensor& x) { return x.isinf(); }},
      {"isfinite", [](const at::Tensor& x) { return x.isfinite(); }},
      {"logical_not", [](const at::Tensor& x) { return x.logical_not(); }},
      {"bitwise_not", [](const at::Tensor& x) { return x.bitwise_not(); }},
      {"cast_to_float", [](const at::Tensor& x) { return x.to(at::kFloat); }},
      {"cast_to_int", [](const at::Tensor& x) { return x.to(at::kInt); }},
      {"cast_to_bool", [](const at::Tensor& x) { return x.to(at::kBool); }},
      {"cast_to_half", [](const at::Tensor& x) { return x.to(at::kHalf); }},
      {"add_scalar", [](const at::Tensor& x) { return x + 3; }},
      {"mul_double", [](const at::Tensor& x) { return x * 1.5; }},
      {"rsub", [](const at::Tensor& x) { return 2 - x; }},
      {"div_scalar", [](const at::Tensor& x) { return x / 4; }},
      {"eq_scalar", [](const at::Tensor& x) { return x == 1; }},
      {"gt_scalar", [](const at::Tensor& x) { return x > 0.5; }},
      {"clone", [](const at::Tensor& x) { return x.clone(); }},
      {"zeros_like", [](const at::Tensor& x) { return at::zeros_like(x) + x; }},
      {"full_like", [](const at::Tensor& x) { return at::full_like(x, 7) * x; }},
  };
  return ops;
}

inline const std::vector<std::pair<const char*, Binary>>& binary_ops() {
  static const std::vector<std::pair<const char*, Binary>> ops = {
      {"add", [](const at::Tensor& a, const at::Tensor& b) { return a + b; }},
      {"add_alpha", [](const at::Tensor& a, const at::Tensor& b) { return at::add(a, b, 2); }},
      {"sub", [](const at::Tensor& a, const at::Tensor& b) { return a - b; }},
      {"mul", [](const at::Tensor& a, const at::Tensor& b) { return a * b; }},
      {"div", [](const at::Tensor& a, const at::Tensor& b) { return a / (b.abs() + 1); }},
      {"div_floor", [](const at::Tensor& a, const at::Tensor& b) { return at::div(a, b.abs() + 1, "floor"); }},
      {"div_trunc", [](const at::Tensor& a, const at::Tensor& b) { return at::div(a, b.abs() + 1, "trunc"); }},
      {"floor_divide", [](const at::Tensor& a, const at::Tensor& b) { return at::floor_divide(a, b.abs() + 1); }},
      {"remainder", [](const at::Tensor& a, const at::Tensor& b) { return at::remainder(a, b.abs() + 1); }},
      {"fmod", [](const at::Tensor& a, const at::Tensor& b) { return at::fmod(a, b.abs() + 1); }},
      {"pow", [](const at::Tensor& a, const at::Tensor& b) { return at::pow(a.abs() + 1, b); }},
      {"atan2", [](const at::Tensor& a, const at::Tensor& b) { return at::atan2(a, b); }},
      {"maximum", [](const at::Tensor& a, const at::Tensor& b) { return at::maximum(a, b); }},
      {"minimum", [](const at::Tensor& a, const at::Tensor& b) { return at::minimum(a, b); }},
      {"eq", [](const at::Tensor& a, const at::Tensor& b) { return a == b; }},
      {"ne", [](const at::Tensor& a, const at::Tensor& b) { return a != b; }},
      {"lt", [](const at::Tensor& a, const at::Tensor& b) { return a < b; }},
      {"le", [](const at::Tensor& a, const at::Tensor& b) { return a <= b; }},
      {"gt", [](const at::Tensor& a, const at::Tensor& b) { return a > b; }},
      {"ge", [](const at::Tensor& a, const at::Tensor& b) { return a >= b; }},
      {"logical_and", [](const at::Tensor& a, const at::Tensor& b) { return at::logical_and(a, b); }},
      {"logical_or", [](const at::Tensor& a, const at::Tensor& b) { return at::logical_or(a, b); }},
      {"logical_xor", [](const at::Tensor& a, const at::Tensor& b) { return at::logical_xor(a, b); }},
      {"bitwise_and", [](const at::Tensor& a, const at::Tensor& b) { return at::bitwise_and(a, b); }},
      {"bitwise_or", [](const at::Tensor& a, const at::Tensor& b) { return at::bitwise_or(a, b); }},
      {"bitwise_xor", [](const at::Tensor& a, const at::Tensor& b) { return at::bitwise_xor(a, b); }},
      {"where", [](const at::Tensor& a, const at::Tensor& b) { return at::where(a > b, a, b); }},
      {"masked_fill", [](const at::Tensor& a, const at::Tensor& b) { return a.masked_fill(b > 0, 3); }},
      {"clamp_tensor", [](const at::Tensor& a, const at::Tensor& b) { return at::clamp(a, b, b + 1); }},
      {"addcmul", [](const at::Tensor& a, const at::Tensor& b) { return at::addcmul(a, a, b, 0.5); }},
      {"addcdiv", [](const at::Tensor& a, const at::Tensor& b) { return at::addcdiv(a, a, b.abs() + 1, 0.5); }},
      {"lerp", [](const at::Tensor& a, const at::Tensor& b) { return at::lerp(a, b, b.sigmoid()); }},
  };
  return ops;
}


// Reductions over various dims, with keepdim.
inline const std::vector<std::pair<const char*, Unary>>& reduction_ops() {
  static const std::vector<std::pair<const char*, Unary>> ops = {
      {"sum-1", [](const at::Tensor& x) { return x.sum(-1); }},
      {"sum0", [](const at::Tensor& x) { return x.sum(0); }},
      {"sum01k", [](const at::Tensor& x) { return x.sum(at::IntArrayRef{0, 2}, true); }},
      {"sum_all", [](const at::Tensor& x) { return x.sum(); }},
      {"mean-1k", [](const at::Tensor& x) { return x.mean(-1, true); }},
      {"mean1", [](const at::Tensor& x) { return x.mean(1); }},
      {"amax", [](const at::Tensor& x) { return x.amax(-1); }},
      {"amin0", [](const at::Tensor& x) { return x.amin(0, true); }},
      {"max_dim_values", [](const at::Tensor& x) { return std::get<0>(x.max(1)); }},
      {"max_dim_indices", [](const at::Tensor& x) { return std::get<1>(x.max(1)); }},
      {"min_dim_indices", [](const at::Tensor& x) { return std::get<1>(x.min(-1, true)); }},
      {"max_all", [](const at::Tensor& x) { return x.max(); }},
      {"prod", [](const at::Tensor& x) { return (x * 0.5 + 1).prod(-1); }},
      {"argmax", [](const at::Tensor& x) { return x.argmax(-1); }},
      {"argmin0", [](const at::Tensor& x) { return x.argmin(0, true); }},
      {"argmax_all", [](const at::Tensor& x) { return x.argmax(); }},
      {"var", [](const at::Tensor& x) { return x.var(-1); }},
      {"var0k", [](const at::Tensor& x) { return at::var(x, {0}, 0, true); }},
      {"std", [](const at::Tensor& x) { return x.std(1); }},
      {"var_mean", [](const at::Tensor& x) { auto [v, m] = at::var_mean(x, {-1}); return v + m; }},
      {"logsumexp", [](const at::Tensor& x) { return x.logsumexp({-1}); }},
      {"any", [](const at::Tensor& x) { return (x > 1).any(-1); }},
      {"all", [](const at::Tensor& x) { return (x > -1).all(1); }},
      {"softmax", [](const at::Tensor& x) { return x.softmax(-1); }},
      {"log_softmax", [](const at::Tensor& x) { return x.log_softmax(-1); }},
      {"softmax_dim1", [](const at::Tensor& x) { return x.softmax(1); }},
      {"sum_of_squares", [](const at::Tensor& x) { return (x * x).sum(-1); }},
  };
  return ops;
}

}  // namespace jitc::testing
