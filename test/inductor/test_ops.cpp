// Parity of every lowered op with eager, through jitc::compile (backend inductor): across dtypes, with
// broadcasting, non-contiguous, transposed and expanded inputs, size-0 and size-1 dims.
#include "inductor/op_lists.h"
#include "support/parity.h"

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

namespace {

using jitc::testing::binary_ops;
using jitc::testing::compiled_vs_eager;
using jitc::testing::kAllDtypes;
using jitc::testing::sample;
using jitc::testing::unary_ops;

template <class F, class... T>
void check(const std::string& name, F fn, const T&... inputs) {
  jitc::testing::check_lowered_parity(name, fn, inputs...);
}

// Eager multiplies half and bfloat16 products in their own precision (a long row overflows to inf or
// drifts by more than the tolerance); jitc multiplies in float32 and rounds once, one row at a time or
// side by side. Short rows ([4, 5, 33] below) agree; the tall inputs leave half products out.
bool half_prod(const std::string& name, c10::ScalarType dtype) {
  return name == "prod" && (dtype == at::kHalf || dtype == at::kBFloat16);
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
  const auto& reductions = jitc::testing::reduction_ops();
  for (auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kInt, at::kLong, at::kBool})
    for (const auto& [name, op] : reductions) check(std::string(name) + " " + c10::toString(dtype), op, sample({4, 5, 33}, dtype, 6));
  for (const auto& [name, op] : reductions) check(std::string(name) + " transposed", op, at::randn({33, 5, 4}).permute({2, 1, 0}));
}

TEST_CASE("reductions of tall inputs match eager (outer dims take rows side by side)", "[inductor][ops]") {
  // [2500, 3, 37]: reductions over dims 0 and 1 leave the unit-stride dim outer; 37 columns take blocks of
  // 32, the second moved back over the first. [1000, 130]: 2 blocks of 64 and a third moved back.
  const auto& reductions = jitc::testing::reduction_ops();
  for (auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kLong, at::kBool})
    for (const auto& [name, op] : reductions) {
      if (half_prod(name, dtype)) continue;
      check(std::string(name) + " tall 3-d " + c10::toString(dtype), op, sample({2500, 3, 37}, dtype, 7));
      check(std::string(name) + " tall 2-d " + c10::toString(dtype), op, sample({1000, 130}, dtype, 8));
    }
  // Several reductions and row values per kernel, a row value read by a later loop, two reduced dims.
  const std::vector<std::pair<const char*, jitc::testing::Unary>> more = {
      {"logsumexp0", [](const at::Tensor& x) { return x.logsumexp({0}); }},
      {"var_mean0", [](const at::Tensor& x) { auto [v, m] = at::var_mean(x, {0}); return v + m; }},
      {"std0", [](const at::Tensor& x) { return x.std(0); }},
      {"amax0 amin0", [](const at::Tensor& x) { return x.amax(0) * 2 + x.amin(0); }},
      {"sum01", [](const at::Tensor& x) { return x.sum(at::IntArrayRef{0, 1}); }},
      {"argmax1", [](const at::Tensor& x) { return x.argmax(1); }},
  };
  for (auto dtype : {at::kFloat, at::kHalf, at::kLong})
    for (const auto& [name, op] : more) {
      check(std::string(name) + " tall 3-d " + c10::toString(dtype), op, sample({2500, 3, 37}, dtype, 11));
      check(std::string(name) + " tall 2-d " + c10::toString(dtype), op, sample({1000, 130}, dtype, 12));
    }
  const auto x = at::randn({700, 96}), w = at::randn({96});
  check("sum0 of x + bias", [](const at::Tensor& x, const at::Tensor& w) { return (x + w).sum(0) * w; }, x, w);
}

TEST_CASE("reductions over the outer dim propagate NaN and keep the first of equal values", "[inductor][ops]") {
  for (auto dtype : {at::kFloat, at::kDouble, at::kHalf}) {
    auto x = sample({300, 70}, dtype, 9).round();  // rounded: many equal values
    for (auto [i, j] : {std::pair<int64_t, int64_t>{5, 3}, {200, 3}, {299, 69}, {0, 40}}) x[i][j] = NAN;
    x[7][50] = INFINITY, x[8][51] = -INFINITY;
    for (const auto& [name, op] : jitc::testing::reduction_ops())
      if (!half_prod(name, dtype)) check(std::string(name) + " NaN " + c10::toString(dtype), op, x);
  }
  const auto ties = sample({500, 67}, at::kInt, 10).clamp(-2, 2);
  check("argmax0 ties", [](const at::Tensor& x) { return x.argmax(0); }, ties);
  check("min0 ties", [](const at::Tensor& x) { auto [v, i] = x.min(0); return i * 10 + v; }, ties);
  check("any0 all0", [](const at::Tensor& x) { return (x > 1).any(0).logical_xor((x > -2).all(0)); }, ties);
  check("prod0", [](const at::Tensor& x) { return (x.to(at::kFloat) * 0.01 + 1).prod(0); }, ties);
}

// exp's clamps and two-step scaling, erf's clamp and softmax at the edges of float's range:
// overflow to inf, results in the denormals, underflow to 0, infinities and NaN. 21 values: the
// vectorized loop and its scalar remainder both run.
TEST_CASE("exp erf and softmax at the edges of the float range match eager", "[inductor][ops]") {
  const auto x = at::tensor({-INFINITY, -1000.f, -104.5f, -103.98f, -103.9f, -100.f, -87.5f, -10.f, -1e-8f, 0.f, 1e-8f, 0.34f, 1.f,
                             50.f, 88.7f, 88.72f, 88.73f, 89.5f, 1000.f, INFINITY, NAN});
  check("exp edges", [](const at::Tensor& x) { return x.exp(); }, x);
  check("exp edges as double", [](const at::Tensor& x) { return x.exp(); }, x.to(at::kDouble));
  check("erf edges", [](const at::Tensor& x) { return at::erf(x); }, x);
  // Eager's gelu(inf) is NaN (jitc's inf): +inf left out.
  check("gelu edges", [](const at::Tensor& x) { return at::gelu(x); }, x.clamp_max(1000.f));
  check("softmax with -inf", [](const at::Tensor& x) { return at::softmax(x, -1); }, x.slice(0, 0, 20).reshape({4, 5}));
}

// The CPU printer's float erf is a rational function of its own, not ATen's formula: held to erf in double
// over [-6, 6] (its absolute error there, measured over every 97th float, is 3.3e-7; ATen's 6.2e-7), and
// to x * 2/sqrt(pi) within a float's rounding for tiny x, where 1 - poly * exp(-x^2) would cancel.
TEST_CASE("float erf stays within 4e-7 of erf in double", "[inductor][ops]") {
  auto erf = jitc::compile([](const at::Tensor& x) { return at::erf(x); });
  const auto x = at::linspace(-6, 6, 120001, at::kFloat);
  erf(x);
  const auto error = (erf(x).to(at::kDouble) - x.to(at::kDouble).erf()).abs().max().item<double>();
  CHECK(error < 4e-7);
  const auto tiny = at::tensor({1e-30f, -3e-20f, 1e-10f, 2.5e-6f});
  erf(tiny);  // a new shape: this call traces again
  const auto relative = ((erf(tiny).to(at::kDouble) / tiny.to(at::kDouble).erf()) - 1).abs().max().item<double>();
  CHECK(relative < 3e-7);
  CHECK(erf.stats().programs_compiled == 2);
}

// Float sin and cos in an element loop take one shared reduction and polynomials (Emitter::sincos_float),
// held to sin and cos in double for |x| < 65536 (measured: 9.2e-8; libmvec, which jitc called before,
// 1.0e-7; eager's Sleef 3.6e-8); a tile with an argument past that range, an infinity or a NaN runs again
// through libm, which eager's results match.
TEST_CASE("float sin and cos stay within 1.5e-7 of double and past 65536 match eager", "[inductor][ops]") {
  auto sin = jitc::compile([](const at::Tensor& x) { return x.sin(); });
  auto cos = jitc::compile([](const at::Tensor& x) { return x.cos(); });
  const auto x = at::cat({at::linspace(-65535, 65535, 400001, at::kFloat), at::linspace(-7, 7, 100001, at::kFloat)});
  const auto error = [&](auto& f, const at::Tensor& in, const at::Tensor& want) {
    f(in);
    return (f(in).to(at::kDouble) - want).abs().max().template item<double>();
  };
  CHECK(error(sin, x, x.to(at::kDouble).sin()) < 1.5e-7);
  CHECK(error(cos, x, x.to(at::kDouble).cos()) < 1.5e-7);
  const float inf = std::numeric_limits<float>::infinity();
  auto far = at::linspace(-3, 3, 5000, at::kFloat);
  far.index_put_({2500}, 1e30f);
  far.index_put_({10}, 70000.f);
  far.index_put_({4000}, inf);
  far.index_put_({4001}, -inf);
  far.index_put_({4002}, std::nanf(""));
  check("sin past its range", [](const at::Tensor& x) { return x.sin() * 2; }, far);
  check("cos past its range", [](const at::Tensor& x) { return (x.sin() + x.cos()).relu(); }, far);
  CHECK(error(sin, far.narrow(0, 0, 4000), far.narrow(0, 0, 4000).to(at::kDouble).sin()) < 1.5e-7);
}

TEST_CASE("normalizations match eager", "[inductor][ops]") {
  const auto x = at::randn({6, 40}), w = at::randn({40}), b = at::randn({40});
  check("layer_norm", [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) { return at::layer_norm(x, {40}, w, b); }, x, w, b);
  check("layer_norm without affine", [](const at::Tensor& x) { return at::layer_norm(x, {40}); }, x);
  check("layer_norm over two dims", [](const at::Tensor& x) { return at::layer_norm(x, {5, 8}); }, x.view({6, 5, 8}));
  check("layer_norm over two dims of a transposed input", [](const at::Tensor& x) { return at::layer_norm(x, {5, 6}) + 1; },
        x.view({8, 5, 6}).transpose(0, 2));
  check("rms_norm over two dims", [](const at::Tensor& x) { return at::rms_norm(x, {5, 8}, std::nullopt, 1e-6); }, x.view({6, 5, 8}));
  check("log_softmax over dim 0, then scaled", [](const at::Tensor& x) { return at::log_softmax(x, 0) * 2; }, x);
  check("softmax over a middle dim of a permuted input", [](const at::Tensor& x) { return at::softmax(x, 1); },
        x.view({8, 5, 6}).permute({2, 1, 0}));
  check("softmax over dim 0 in half", [](const at::Tensor& x) { return at::softmax(x, 0); }, x.to(at::kHalf));
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

// A normalization's half or bfloat16 result is rounded before the op that reads it, as eager stores it:
// a - float(a) rounded to the dtype is exactly 0 in eager, and in jitc only when a was rounded.
// A constant row has mean x and variance 0: eager's Welford statistics get both exactly, so the output is
// the bias. A mean off by one ulp (sum / n) would come out as 316 ulps (rstd = 1/sqrt(eps)).
TEST_CASE("normalizations of constant rows give exactly the bias as in eager", "[inductor][ops]") {
  const auto rows = at::tensor({7.1f, 0.3f, -5.7f, 1e4f}).view({4, 1, 1}).expand({4, 6, 5}).contiguous();
  const auto w = at::randn({6, 5}), b = at::randn({6, 5}), w5 = at::randn({5}), b5 = at::randn({5});
  const jitc::testing::Tolerance exact{0, 0};
  auto same = [&](auto fn, const auto&... inputs) {
    const at::Tensor want = fn(inputs...);
    auto f = jitc::compile(fn);
    f(inputs...);
    return jitc::testing::difference(f(inputs...), want, exact);
  };
  CHECK(same([&](const at::Tensor& x) { return at::layer_norm(x, {5}, w5, b5); }, rows) == "");
  CHECK(same([&](const at::Tensor& x) { return at::layer_norm(x, {6, 5}, w, b); }, rows) == "");
  CHECK(same([](const at::Tensor& x) { return at::group_norm(x.view({4, 6, 5, 1}), 2); }, rows) == "");
  CHECK(same([](const at::Tensor& x) { return std::get<1>(at::native_layer_norm(x, {5}, {}, {}, 1e-5)); }, rows) == "");
}

// Eager stores every op's result, so an inlined half or bfloat16 value must be rounded before the next
// op reads it. Here that op is a cast to float, whose result is returned: it must hold half or bfloat16
// values, bit for bit.
TEST_CASE("every inlined op rounds half and bfloat16 results as eager stores them", "[inductor][ops]") {
  const auto img = at::randn({2, 6, 5, 5}) * 4, rows = at::randn({6, 40}) * 4, mean = at::randn({6}), var = at::rand({6}) + 0.5;
  using Norm = std::function<at::Tensor(const at::Tensor&)>;
  const std::vector<std::tuple<const char*, Norm, at::Tensor>> norms = {
      {"group_norm", [](const at::Tensor& x) { return at::group_norm(x, 3); }, img},
      {"batch_norm", [mean, var](const at::Tensor& x) {
         return at::batch_norm(x, {}, {}, mean.to(x.scalar_type()), var.to(x.scalar_type()), false, 0.1, 1e-5, false);
       }, img},
      {"softmax", [](const at::Tensor& x) { return at::softmax(x, -1); }, rows},
      {"log_softmax over dim 0", [](const at::Tensor& x) { return at::log_softmax(x, 0); }, rows},
      {"layer_norm", [](const at::Tensor& x) { return at::layer_norm(x, {40}); }, rows},
      {"pointwise", [](const at::Tensor& x) { return x.sin() * 3; }, rows},
      {"sum and mean", [](const at::Tensor& x) { return x.sum(-1) + x.mean(0).sum(); }, rows},
      {"var", [](const at::Tensor& x) { return x.var(1); }, rows},
      {"view of a computed value", [](const at::Tensor& x) { return x.exp().t().slice(0, 1, 30); }, rows},
      {"constant not representable", [](const at::Tensor& x) { return at::full_like(x, 0.1); }, rows},
      {"pad value not representable", [](const at::Tensor& x) { return at::constant_pad_nd(x, {1, 1}, 0.1); }, rows},
      {"cat of computed values", [](const at::Tensor& x) { return at::cat({x.exp(), x / 3}); }, rows},
  };
  for (auto dtype : {at::kHalf, at::kBFloat16})
    for (const auto& [name, norm, input] : norms) {
      auto widened = [norm = norm](const at::Tensor& x) { return norm(x).to(at::kFloat); };
      auto rounded = [dtype](const at::Tensor& a) { return at::equal(a, a.to(dtype).to(at::kFloat)); };
      const at::Tensor x = input.to(dtype);
      INFO(name << " " << c10::toString(dtype));
      REQUIRE(rounded(widened(x)));
      auto f = jitc::compile(widened);
      f(x);
      CHECK(rounded(f(x)));
      CHECK(f.stats().programs_compiled == 1);
    }
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
  using jitc::testing::check_parity;  // extern calls expected
  check_parity("linear gelu", [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) { return at::gelu(at::linear(x.relu(), w, b)) + 1; }, x, w, b);
  check_parity("matmul softmax matmul", [](const at::Tensor& q) { return at::matmul(at::softmax(at::matmul(q, q.t()) / 4.0, -1), q); }, x);
  check_parity("a tensor returned twice and a view of it", [](const at::Tensor& x) { return (x.exp() + x.exp().t().t()).t(); }, x);
}

TEST_CASE("reductions over all dims take their default overloads: max() min() and a dtype argument", "[inductor][ops]") {
  const auto x = at::randn({3, 4, 5});
  check("max()", [](const at::Tensor& x) { return x.max() + 1; }, x);
  check("min()", [](const at::Tensor& x) { return x.min() * 2; }, x);
  check("max() of ints", [](const at::Tensor& x) { return x.max(); }, sample({3, 4, 5}, at::kInt, 1));
  // A dtype in the default overload's place of dims: read as a dim, kInt would reduce dim 3 of 4.
  const auto x4 = sample({2, 3, 4, 5}, at::kShort, 2);
  check("sum(dtype=int)", [](const at::Tensor& x) { return x.sum(at::kInt); }, x4);
  check("sum(dtype=long)", [](const at::Tensor& x) { return x.sum(at::kLong) + 1; }, x4);
  check("mean(dtype=double)", [](const at::Tensor& x) { return x.mean(at::kDouble); }, at::randn({2, 3, 4, 5}));
  check("prod(dtype=long)", [](const at::Tensor& x) { return x.prod(at::kLong); }, sample({2, 3}, at::kInt, 3));
  check("argmax over all dims with keepdim", [](const at::Tensor& x) { return x.argmax(std::nullopt, true); }, x);
}

TEST_CASE("where with numbers and narrow are kernels while view as another dtype stays a bit cast", "[inductor][ops]") {
  const auto x = at::randn({4, 6});
  check("where(c, x, 0.5)", [](const at::Tensor& x) { return at::where(x > 0, x, 0.5); }, x);
  check("where(c, 2, x)", [](const at::Tensor& x) { return at::where(x > 0, at::Scalar(2), x * 3); }, x);
  check("where(c, 1, -1)", [](const at::Tensor& x) { return at::where(x > 0, at::Scalar(1), at::Scalar(-1)) + x; }, x);
  check("narrow of a computed value", [](const at::Tensor& x) { return (x.exp() + 1).narrow(1, 2, 3).neg(); }, x);
  check("narrow from the end", [](const at::Tensor& x) { return (x * 2).narrow(0, -2, 2); }, x);
  // Bits, not values: a kernel that converted the floats would give other integers.
  jitc::testing::check_parity("view(int) & mask", [](const at::Tensor& x) { return (x + 1).view(at::kInt).bitwise_and(0xffff); }, x);
  jitc::testing::check_parity("view(short)", [](const at::Tensor& x) { return (x * 3).view(at::kShort) + 1; }, x);
}

TEST_CASE("factories are exact: arange in ATen's accumulate type and full with 64-bit integers", "[inductor][ops]") {
  auto arange = jitc::compile([](const at::Tensor& x) { return at::arange(0.1, 40.0, 0.1) + x; });
  const auto zero = at::zeros({1});
  arange(zero);
  // Within 2 ulps: ATen's vectorized arange rounds twice (each vector's base to float, then base + k *
  // step), so its last bit depends on its vector width; jitc rounds start + i * step once.
  CHECK(at::allclose(arange(zero), at::arange(0.1, 40.0, 0.1) + zero, 2.4e-7, 0));
  constexpr int64_t kBig = (int64_t{1} << 60) + 3;  // not a double
  auto full = jitc::compile([](const at::Tensor& x) { return at::full({4}, kBig, at::kLong) + x; });
  const auto ones = at::ones({4}, at::kLong);
  full(ones);
  CHECK(at::equal(full(ones), at::full({4}, kBig + 1, at::kLong)));
}

TEST_CASE("empty parts and inputs: cat pad index_select and t on 0-d", "[inductor][ops]") {
  const auto x = at::randn({3, 4}), none = at::randn({3, 0});
  check("cat with an empty part", [](const at::Tensor& x, const at::Tensor& e) { return at::cat({x.exp(), e, x}, 1); }, x, none);
  check("pad of an empty input", [](const at::Tensor& e) { return at::constant_pad_nd(e, {1, 2}, 0.25) + 1; }, none);
  check("index_select with a 0-d index", [](const at::Tensor& x, const at::Tensor& i) { return x.index_select(1, i) * 2; }, x,
        at::tensor(2, at::kLong));
  check("t of a 0-d tensor", [](const at::Tensor& s) { return (s + 1).t() * 2; }, at::randn({}));
  // Eager raises the index error; the compiled function raises it too, on every call (no kernel reads
  // the empty weight).
  auto embed = jitc::compile([](const at::Tensor& w, const at::Tensor& i) { return at::embedding(w, i) + 1; });
  const auto empty_weight = at::randn({0, 3}), index = at::tensor({0}, at::kLong);
  for (int call = 0; call < 3; ++call) CHECK_THROWS(embed(empty_weight, index));
}

TEST_CASE("normalizations match eager across dtypes and layouts", "[inductor][ops]") {
  for (auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    INFO(c10::toString(dtype));
    const auto x = (at::randn({6, 40}) * 0.03).to(dtype), w = at::randn({40}).to(dtype), b = at::randn({40}).to(dtype);
    check("layer_norm", [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) { return at::layer_norm(x, {40}, w, b); }, x, w, b);
    // eps=None: the epsilon of the compute type (float32's for half and bfloat16), which matters at this scale.
    check("rms_norm eps=None", [](const at::Tensor& x, const at::Tensor& w) { return at::rms_norm(x, {40}, w, std::nullopt); }, x, w);
    const auto img = at::randn({2, 6, 5, 5}).to(dtype), g = at::randn({6}).to(dtype), m = at::randn({6}).to(dtype);
    check("batch_norm", [](const at::Tensor& x, const at::Tensor& g, const at::Tensor& m) {
      return at::batch_norm(x, g, m, m, g.abs() + 0.5, false, 0.1, 1e-5, false);
    }, img, g, m);
    check("group_norm", [](const at::Tensor& x, const at::Tensor& g, const at::Tensor& b) { return at::group_norm(x, 2, g, b); }, img, g, m);
    check("group_norm without affine", [](const at::Tensor& x) { return at::group_norm(x, 3) + 1; }, img);
  }
  const auto xt = at::randn({40, 6}).t();
  check("layer_norm of a transposed input", [](const at::Tensor& x) { return at::layer_norm(x, {40}); }, xt);
  check("rms_norm of a transposed input", [](const at::Tensor& x) { return at::rms_norm(x, {40}, std::nullopt, 1e-6); }, xt);
  check("softmax of a transposed input", [](const at::Tensor& x) { return at::softmax(x, -1); }, xt);
  check("layer_norm of no rows", [](const at::Tensor& x) { return at::layer_norm(x, {40}); }, at::randn({0, 40}));
  check("softmax of one column", [](const at::Tensor& x) { return at::log_softmax(x, -1); }, at::randn({5, 1}));
}

TEST_CASE("views cat stack pad and indexing match eager across dtypes and on strided inputs", "[inductor][ops]") {
  for (auto dtype : {at::kDouble, at::kHalf, at::kInt, at::kByte, at::kBool}) {
    INFO(c10::toString(dtype));
    const auto x = sample({4, 6}, dtype, 4), y = sample({4, 6}, dtype, 5);
    check("permute reshape", [](const at::Tensor& x) { return x.t().reshape({3, 8}).permute({1, 0}).contiguous(); }, x);
    check("cat stack", [](const at::Tensor& x, const at::Tensor& y) { return at::cat({x, at::stack({x, y}, 0).select(0, 1)}, 0); }, x, y);
    check("pad", [](const at::Tensor& x) { return at::constant_pad_nd(x, {1, 1}, 1); }, x);
    check("index_select gather", [](const at::Tensor& x, const at::Tensor& columns, const at::Tensor& rows) {
      return x.index_select(1, columns).gather(0, rows);
    }, x, at::tensor({5, 0, 3}, at::kLong), at::tensor({3, 0, 1}, at::kLong).view({1, 3}));
  }
  const auto strided = at::randn({6, 8}).t().slice(0, 1, 7);  // non-contiguous, offset storage
  check("cat of strided", [](const at::Tensor& x) { return at::cat({x, x.neg()}, 1); }, strided);
  check("pad of strided", [](const at::Tensor& x) { return at::constant_pad_nd(x, {2, 0, 0, 1}); }, strided);
  check("gather of strided", [](const at::Tensor& x, const at::Tensor& i) { return x.gather(1, i); }, strided,
        at::tensor({0, 5, 1, 1}, at::kLong).view({2, 2}));
  check("embedding of an expanded index", [](const at::Tensor& w, const at::Tensor& i) { return at::embedding(w, i) * 2; },
        at::randn({5, 3}), at::tensor({1, 3}, at::kLong).expand({4, 2}));
}

namespace {

// fn compiled once and run at several sizes of a dynamic dim: one program, every op lowered, eager's
// results.
template <class F>
void check_dynamic(const std::string& name, F fn, const std::function<at::Tensor(int64_t)>& input_of) {
  INFO(name);
  jitc::testing::LogCapture logs("perf_hints,fusion");
  auto compiled = jitc::compile(fn);
  compiled(input_of(3));
  compiled(input_of(5));  // the second size makes the dim symbolic
  for (int64_t size : {2, 7, 12}) {
    const auto x = input_of(size);
    compiled(x);
    CHECK(jitc::testing::difference(compiled(x), fn(x), jitc::testing::tolerance_for(fn(x).scalar_type())) == "");
  }
  CHECK(compiled.stats().programs_compiled == 1);
  CHECK(jitc::testing::unlowered_ops(logs) == std::vector<std::string>{});
}

}  // namespace

TEST_CASE("one compile serves every size of a dynamic dim across op kinds", "[inductor][ops][dynamic]") {
  auto rows = [](int64_t n) { return at::randn({n, 12}); };
  check_dynamic("unary chain", [](const at::Tensor& x) { return (x.sin() * x.sigmoid()).tanh() + x.abs().sqrt(); }, rows);
  check_dynamic("binary broadcast", [](const at::Tensor& x) { return at::maximum(x, x.sum(0, true)) - x.t().t(); }, rows);
  check_dynamic("reductions", [](const at::Tensor& x) { return x.amax(-1) + x.prod(-1) + x.logsumexp(-1) + x.std(-1); }, rows);
  check_dynamic("layer_norm", [](const at::Tensor& x) { return at::layer_norm(x, {12}) * 2; }, rows);
  check_dynamic("rms_norm", [](const at::Tensor& x) { return at::rms_norm(x, {12}, std::nullopt, 1e-6); }, rows);
  check_dynamic("softmax over the dynamic dim", [](const at::Tensor& x) { return at::softmax(x, 0) - 1; }, rows);
  check_dynamic("views", [](const at::Tensor& x) { return x.unsqueeze(1).transpose(0, 2).flatten(0, 1).relu(); }, rows);
  check_dynamic("cat and pad", [](const at::Tensor& x) { return at::constant_pad_nd(at::cat({x, x * 2}, 1), {1, 1}); }, rows);
  const auto columns = at::tensor({0, 11, 4}, at::kLong);  // captured: read by reference on every call
  check_dynamic("index_select", [columns](const at::Tensor& x) { return x.index_select(1, columns); }, rows);
  check_dynamic("where", [](const at::Tensor& x) { return at::where(x > 0, x, 0.0); }, rows);
}

TEST_CASE("one compile serves views from the end of a dynamic dim and splits and factories sized by it", "[inductor][ops][dynamic]") {
  // A view from the end starts at a storage offset that depends on the size: s - 2 in the last dim,
  // 12 * (s - 2) in the leading one.
  auto rows = [](int64_t n) { return at::randn({n, 12}); };
  auto columns = [](int64_t n) { return at::randn({4, n}); };
  check_dynamic("slice from the end of the leading dim", [](const at::Tensor& x) { return x.slice(0, -2) * 2; }, rows);
  check_dynamic("slice from the end of the last dim", [](const at::Tensor& x) { return x.slice(1, -2) * 2; }, columns);
  check_dynamic("slice from the end of a computed value", [](const at::Tensor& x) { return (x + 1).slice(0, -2).relu(); }, rows);
  check_dynamic("narrow from the end", [](const at::Tensor& x) { return x.narrow(1, -2, 2) - 1; }, columns);
  check_dynamic("select from the end", [](const at::Tensor& x) { return x.select(0, -1) + x.select(0, -2); }, rows);
  check_dynamic("select from the end of the last dim", [](const at::Tensor& x) { return (x * 3).select(1, -1).exp(); }, columns);
  check_dynamic("split with a dynamic last piece", [](const at::Tensor& x) {
    auto pieces = x.split_with_sizes({2, x.size(0) - 2});
    return pieces[0].sum(0) + pieces[1].sum(0);
  }, rows);
  check_dynamic("split of a computed value", [](const at::Tensor& x) {
    auto pieces = (x * 2).split_with_sizes({x.size(1) - 1, 1}, 1);
    return pieces[0].sum(1) - pieces[1].squeeze(1);
  }, columns);
  check_dynamic("arange from a size", [](const at::Tensor& x) { return x + at::arange(x.size(1), 2 * x.size(1), at::kFloat); }, columns);
  check_dynamic("integer arange with a step from a size", [](const at::Tensor& x) {
    return x + at::arange(0, 2 * x.size(1) * x.size(1), x.size(1) * 2, at::kLong);
  }, columns);
  check_dynamic("full of a size", [](const at::Tensor& x) { return x * at::full({1}, x.size(1), at::kFloat); }, columns);
  check_dynamic("new_full of a size in an integer type", [](const at::Tensor& x) {
    return x.new_full({4, x.size(1)}, x.size(1) - 1, at::TensorOptions(at::kInt)) + x;
  }, columns);
}
