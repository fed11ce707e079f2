// Parity of every lowered op with eager, through jitc::compile (backend inductor): across dtypes, with
// broadcasting, non-contiguous, transposed and expanded inputs, size-0 and size-1 dims.
#include "support/parity.h"

#include <functional>
#include <vector>

namespace {

using jitc::testing::compiled_vs_eager;
using Unary = std::function<at::Tensor(const at::Tensor&)>;
using Binary = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;

const std::vector<c10::ScalarType> kAllDtypes = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kLong,
                                                 at::kInt,   at::kShort,  at::kChar, at::kByte,     at::kBool};

at::Tensor sample(at::IntArrayRef sizes, c10::ScalarType dtype, int seed) {
  at::manual_seed(seed);
  if (dtype == at::kBool) return at::rand(sizes) > 0.5;
  if (c10::isFloatingType(dtype)) return (at::randn(sizes) * 2).to(dtype);
  if (dtype == at::kByte) return at::randint(0, 12, sizes).to(dtype);
  return at::randint(-9, 10, sizes).to(dtype);
}

// Checks op on inputs of `dtype`; combinations eager rejects (bitwise ops on floats...) are skipped.
template <class F, class... T>
void check(const std::string& name, F fn, const T&... inputs) {
  try {
    fn(inputs...);
  } catch (const std::exception&) {
    return;
  }
  std::function<at::Tensor(const T&...)> wrapped = fn;
  INFO(name);
  CHECK(compiled_vs_eager([wrapped](const T&... x) { return wrapped(x...); }, inputs...) == "");
}

const std::vector<std::pair<const char*, Unary>>& unary_ops() {
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

const std::vector<std::pair<const char*, Binary>>& binary_ops() {
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

}  // namespace

TEST_CASE("unary ops match eager across dtypes", "[inductor][ops]") {
  for (auto dtype : kAllDtypes)
    for (const auto& [name, op] : unary_ops()) check(std::string(name) + " " + c10::toString(dtype), op, sample({5, 7}, dtype, 1));
}

TEST_CASE("binary ops match eager across dtypes and with mixed dtypes", "[inductor][ops]") {
  for (auto dtype : kAllDtypes)
    for (const auto& [name, op] : binary_ops())
      check(std::string(name) + " " + c10::toString(dtype), op, sample({4, 6}, dtype, 2), sample({4, 6}, dtype, 3));
  for (const auto& [name, op] : binary_ops()) {
    check(std::string(name) + " int+float", op, sample({4, 6}, at::kInt, 4), sample({4, 6}, at::kFloat, 5));
    check(std::string(name) + " half+double", op, sample({4, 6}, at::kHalf, 4), sample({4, 6}, at::kDouble, 5));
    check(std::string(name) + " bool+long", op, sample({4, 6}, at::kBool, 4), sample({4, 6}, at::kLong, 5));
  }
}

TEST_CASE("pointwise ops read broadcast, transposed, expanded and sliced inputs through their strides", "[inductor][ops]") {
  const auto a = at::randn({6, 5}), row = at::randn({5}), column = at::randn({6, 1}), wide = at::randn({5, 6});
  for (const auto& [name, op] : binary_ops()) {
    INFO(name);
    check(std::string(name) + " broadcast row", op, a, row);
    check(std::string(name) + " broadcast column", op, a, column);
    check(std::string(name) + " transposed", op, a, wide.t());
    check(std::string(name) + " expanded", op, a, row.expand({6, 5}));
    check(std::string(name) + " sliced", op, at::randn({9, 11}).slice(0, 1, 7).slice(1, 2, 12, 2), a);
    check(std::string(name) + " zero-dim", op, a, at::randn({}));
  }
}

TEST_CASE("size-0 and size-1 dims", "[inductor][ops]") {
  for (const auto& sizes : std::vector<std::vector<int64_t>>{{0}, {3, 0, 2}, {1}, {1, 1}, {4, 1, 3}, {1, 7}, {}}) {
    const auto x = at::randn(sizes), y = at::randn(sizes);
    check("relu(x * y + 1)", [](const at::Tensor& x, const at::Tensor& y) { return (x * y + 1).relu(); }, x, y);
    if (!sizes.empty() && at::randn(sizes).numel() > 0)
      check("sum(-1)", [](const at::Tensor& x) { return x.sum(-1); }, x);
  }
}

TEST_CASE("reductions match eager over any dims, with keepdim, across dtypes", "[inductor][ops]") {
  using R = std::function<at::Tensor(const at::Tensor&)>;
  const std::vector<std::pair<const char*, R>> reductions = {
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
  for (auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kInt, at::kLong, at::kBool})
    for (const auto& [name, op] : reductions) check(std::string(name) + " " + c10::toString(dtype), op, sample({4, 5, 33}, dtype, 6));
  for (const auto& [name, op] : reductions) check(std::string(name) + " transposed", op, at::randn({33, 5, 4}).permute({2, 1, 0}));
}

TEST_CASE("normalizations match eager", "[inductor][ops]") {
  const auto x = at::randn({6, 40}), w = at::randn({40}), b = at::randn({40});
  check("layer_norm", [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) { return at::layer_norm(x, {40}, w, b); }, x, w, b);
  check("layer_norm without affine", [](const at::Tensor& x) { return at::layer_norm(x, {40}); }, x);
  check("layer_norm over two dims", [](const at::Tensor& x) { return at::layer_norm(x, {5, 8}); }, x.view({6, 5, 8}));
  check("rms_norm", [](const at::Tensor& x, const at::Tensor& w) { return at::rms_norm(x, {40}, w, 1e-6); }, x, w);
  const auto img = at::randn({2, 6, 5, 5}), gamma = at::randn({6}), beta = at::randn({6});
  check("group_norm", [](const at::Tensor& x, const at::Tensor& g, const at::Tensor& b) { return at::group_norm(x, 3, g, b); }, img, gamma, beta);
  const auto mean = at::randn({6}), var = at::rand({6}) + 0.5;
  check("batch_norm in inference",
        [](const at::Tensor& x, const at::Tensor& g, const at::Tensor& b, const at::Tensor& m, const at::Tensor& v) {
          return at::batch_norm(x, g, b, m, v, false, 0.1, 1e-5, false);
        },
        img, gamma, beta, mean, var);
  check("dropout in eval", [](const at::Tensor& x) { return at::dropout(x, 0.5, false) * 2; }, x);
  check("layer_norm half", [](const at::Tensor& x) { return at::layer_norm(x, {40}); }, x.to(at::kHalf));
}

TEST_CASE("views, cat, stack, pad, indexing and factories match eager", "[inductor][ops]") {
  const auto x = at::randn({4, 6}), y = at::randn({4, 6});
  check("view", [](const at::Tensor& x) { return (x + 1).view({6, 4}) * 2; }, x);
  check("reshape of transposed", [](const at::Tensor& x) { return (x + 1).t().reshape({24}); }, x);
  check("permute", [](const at::Tensor& x) { return (x.exp().view({2, 2, 6}).permute({2, 0, 1}) + 1); }, x);
  check("transpose contiguous", [](const at::Tensor& x) { return x.relu().transpose(0, 1).contiguous(); }, x);
  check("expand", [](const at::Tensor& x) { return x.sum(0, true).expand({3, 6}) + 1; }, x);
  check("squeeze unsqueeze", [](const at::Tensor& x) { return x.unsqueeze(1).squeeze(1) * 3; }, x);
  check("slice select narrow", [](const at::Tensor& x) { return x.slice(1, 1, 5, 2).neg() + x.select(0, 2).narrow(0, 1, 2); }, x);
  check("flatten", [](const at::Tensor& x) { return x.sigmoid().flatten(); }, x);
  check("t", [](const at::Tensor& x) { return x.t() * 2; }, x);
  check("cat", [](const at::Tensor& x, const at::Tensor& y) { return at::cat({x, y.relu(), x * 2}, 1); }, x, y);
  check("cat dim0", [](const at::Tensor& x, const at::Tensor& y) { return at::cat({x, y}, 0).exp(); }, x, y);
  check("stack", [](const at::Tensor& x, const at::Tensor& y) { return at::stack({x, y + 1}, 1); }, x, y);
  check("constant_pad_nd", [](const at::Tensor& x) { return at::constant_pad_nd(x, {1, 2, 0, 1}, 0.5); }, x);
  check("pad crop", [](const at::Tensor& x) { return at::constant_pad_nd(x * 2, {-1, 1}); }, x);
  const auto weight = at::randn({10, 3});
  const auto ids = at::tensor({1, 2, 9, 0, 0, 4}, at::kLong).view({2, 3});
  check("embedding", [](const at::Tensor& w, const at::Tensor& i) { return at::embedding(w, i) * 2; }, weight, ids);
  check("index_select", [](const at::Tensor& x, const at::Tensor& i) { return x.index_select(1, i) + 1; }, x, at::tensor({5, 0, 3}, at::kLong));
  check("gather", [](const at::Tensor& x, const at::Tensor& i) { return x.gather(1, i) + 1; }, x, at::randint(0, 6, {4, 3}, at::kLong));
  check("arange", [](const at::Tensor& x) { return x + at::arange(6); }, x);
  check("arange float", [](const at::Tensor& x) { return x * at::arange(0.5, 3.5, 0.5); }, x);
  check("full", [](const at::Tensor& x) { return x + at::full({4, 6}, 2.5); }, x);
  check("zeros ones", [](const at::Tensor& x) { return x * at::ones({6}) + at::zeros({4, 1}); }, x);
  check("split", [](const at::Tensor& x) { auto parts = x.split(2, 1); return parts[0] * parts[2]; }, x);
  check("unbind", [](const at::Tensor& x) { auto rows = x.unbind(0); return rows[0] + rows[3]; }, x);
}

TEST_CASE("extern ops run inside the compiled program and their neighbours still fuse", "[inductor][ops]") {
  const auto x = at::randn({8, 16}), w = at::randn({32, 16}), b = at::randn({32});
  check("linear gelu", [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) { return at::gelu(at::linear(x.relu(), w, b)) + 1; }, x, w, b);
  check("matmul softmax matmul", [](const at::Tensor& q) { return at::matmul(at::softmax(at::matmul(q, q.t()) / 4.0, -1), q); }, x);
  check("a tensor returned twice and a view of it", [](const at::Tensor& x) { return (x.exp() + x.exp().t().t()).t(); }, x);
}
