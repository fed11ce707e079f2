// Eager's semantics at the edges, through compiled programs (the second call of each function runs the
// compiled kernels): errors eager raises (indices out of range, integer division by zero) are raised
// with eager's type and text, and special values (signed zeros, infinities, NaN, shift amounts past the
// width, float32 sums that overflow) give eager's results bit for bit.
#include "support/log_capture.h"
#include "support/parity.h"

#include <fmt/ranges.h>

#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace {

at::Tensor same_elements(const at::Tensor& got, const at::Tensor& want) {
  if (!at::isFloatingType(want.scalar_type())) return got == want;
  const auto g = got.to(at::kDouble), w = want.to(at::kDouble);
  return (g == w & at::signbit(g) == at::signbit(w)) | (at::isnan(g) & at::isnan(w));
}

// Equal values, NaN where eager has NaN, and the same sign of zero.
bool identical(const at::Tensor& got, const at::Tensor& want) {
  if (got.scalar_type() != want.scalar_type() || got.sizes() != want.sizes()) return false;
  return same_elements(got, want).all().item<bool>();
}

// The first few elements where got and want differ, with the inputs there (all of one shape).
template <class... T>
std::string mismatches(const at::Tensor& got, const at::Tensor& want, const T&... inputs) {
  if (got.scalar_type() != want.scalar_type() || got.sizes() != want.sizes()) return "dtypes or sizes differ";
  const auto wrong = at::nonzero(~same_elements(got, want).flatten()).flatten();
  std::ostringstream out;
  for (int64_t k = 0; k < std::min<int64_t>(wrong.numel(), 5); ++k) {
    const int64_t i = wrong[k].item<int64_t>();
    out << "at " << i << ": got " << got.flatten()[i].item<double>() << " want " << want.flatten()[i].item<double>() << " inputs";
    ((out << " " << inputs.flatten()[i].template item<double>()), ...);
    out << "\n";
  }
  return out.str();
}

// The text eager's error gives (without its backtrace), or "" if eager succeeds.
template <class F, class... T>
std::string eager_error(F fn, const T&... args) {
  try {
    fn(args...);
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

// Compiles fn, runs it on `good` twice (trace, then the compiled program) and checks the program's
// result; then runs it on `bad`, which must raise what eager raises, then on `good` again.
// The compiled program gives eager's result on `good` (bit for bit, or close when `rounded`) and raises
// eager's error on `bad`, then goes on giving eager's result.
template <class E, class F, class Args>
void check_raises_as_eager(const std::string& name, F fn, const Args& good, const Args& bad, bool rounded = false) {
  INFO(name);
  auto compiled = jitc::compile(fn);
  auto run = [](auto& f, const Args& args) { return std::apply(f, args); };
  auto identical = [rounded](const at::Tensor& a, const at::Tensor& b) {
    return rounded ? at::allclose(a, b, 1e-5, 1e-6, /*equal_nan=*/true) : ::identical(a, b);
  };
  run(compiled, good);
  CHECK(identical(run(compiled, good), run(fn, good)));
  REQUIRE(compiled.stats().programs_compiled == 1);
  const std::string want = eager_error([&] { run(fn, bad); });
  REQUIRE(want != "");
  std::string got;
  try {
    run(compiled, bad);
  } catch (const E& e) {
    got = e.what_without_backtrace();
  }
  CHECK(got == want);
  CHECK(identical(run(compiled, good), run(fn, good)));
  CHECK(compiled.stats().programs_compiled == 1);
}

at::Tensor longs(std::vector<int64_t> v) { return at::tensor(v, at::kLong); }

// Eager's result element by element (1-d inputs of one shape): eager's CPU kernels run one-element
// tensors through their scalar loop. Its vectorized loop differs for fmod and what is built on it: Sleef's
// vectorized fmod is not C's (floor_divide(-7, 0.0010004) in half is -6996 there, -7000 in the scalar loop;
// fmod(3e38, 0.1) is NaN there, 0.0796 in the scalar loop), so eager's own result depends on an element's
// position in the tensor. jitc computes C's fmod everywhere, as eager's scalar loop does.
template <class F, class... T>
at::Tensor eager_per_element(F fn, const T&... args) {
  std::vector<at::Tensor> parts;
  const int64_t n = std::max({args.numel()...});
  for (int64_t i = 0; i < n; ++i) parts.push_back(fn(args.slice(0, i, i + 1)...));
  return at::cat(parts);
}

// The compiled program's result (the second call), with the check that a program ran.
template <class F, class... T>
at::Tensor compiled_result(F fn, const T&... args) {
  auto compiled = jitc::compile(fn);
  compiled(args...);
  const at::Tensor got = compiled(args...);
  CHECK(compiled.stats().programs_compiled == 1);
  return got;
}

template <class F, class... T>
void check_identical(const std::string& name, F fn, const T&... args) {
  INFO(name);
  CHECK(mismatches(compiled_result(fn, args...), fn(args...), args...) == "");
}

// Close to eager's result (rtol 1e-5), with infinities and NaN where eager has them.
template <class F, class... T>
void check_close(const std::string& name, F fn, const T&... args) {
  const at::Tensor got = compiled_result(fn, args...), want = fn(args...);
  INFO(name << ": got " << got << " want " << want);
  CHECK(at::allclose(got, want, 1e-5, 0, /*equal_nan=*/true));
}

// check_identical against eager's scalar loop (see eager_per_element).
template <class F, class... T>
void check_identical_to_scalar_loop(const std::string& name, F fn, const T&... args) {
  INFO(name);
  CHECK(mismatches(compiled_result(fn, args...), eager_per_element(fn, args...), args...) == "");
}

}  // namespace

TEST_CASE("indices out of range raise eager's IndexError from compiled programs", "[inductor][semantics]") {
  const auto table = at::randn({5, 3});
  for (int64_t bad : {5, 17, -1}) {
    const std::string tag = " index " + std::to_string(bad);
    check_raises_as_eager<c10::IndexError>(
        "embedding" + tag, [&table](const at::Tensor& i) { return at::embedding(table, i) * 2; }, std::make_tuple(longs({0, 4, 2})),
        std::make_tuple(longs({0, bad, 2})));
    check_raises_as_eager<c10::Error>(
        "index_select" + tag, [](const at::Tensor& x, const at::Tensor& i) { return x.index_select(1, i) + 1; },
        std::make_tuple(at::randn({4, 3}), longs({2, 0})), std::make_tuple(at::randn({4, 3}), longs({2, bad == 5 ? 3 : bad})));
    check_raises_as_eager<c10::Error>(
        "gather" + tag, [](const at::Tensor& x, const at::Tensor& i) { return x.gather(0, i).relu(); },
        std::make_tuple(at::randn({5, 3}), longs({0, 4, 1, 2, 3, 0}).view({2, 3})),
        std::make_tuple(at::randn({5, 3}), longs({0, 4, 1, 2, bad, 0}).view({2, 3})));
  }
}

// A fused kernel computes an inlined value only where its reader reads it: the checks must still see every
// index and divisor eager's kernels see, those at elements a slice, a select or another index skips too.
TEST_CASE("indices out of range and zero divisors raise as in eager where only part of the result is read", "[inductor][semantics]") {
  at::manual_seed(23);
  const auto table = at::randn({5, 3});
  const auto x = at::randn({5, 3}), columns = at::randn({4, 3});
  for (int64_t bad : {5, -1}) {
    const std::string tag = " index " + std::to_string(bad);
    check_raises_as_eager<c10::Error>(
        "embedding, a slice read" + tag, [&table](const at::Tensor& i) { return at::embedding(table, i).slice(0, 0, 1) * 2; },
        std::make_tuple(longs({0, 4, 2})), std::make_tuple(longs({0, bad, 2})));
    check_raises_as_eager<c10::Error>(
        "index_select, a select read" + tag, [&columns](const at::Tensor& i) { return columns.index_select(1, i).select(1, 0) + 1; },
        std::make_tuple(longs({2, 0})), std::make_tuple(longs({2, bad == 5 ? 3 : bad})));
    check_raises_as_eager<c10::Error>(
        "gather, then a pointwise op, then a narrow" + tag,
        [&x](const at::Tensor& i) { return (x.gather(0, i) + 1).narrow(1, 0, 1).exp(); },
        std::make_tuple(longs({0, 4, 1, 2, 3, 0}).view({2, 3})), std::make_tuple(longs({0, 4, 1, 2, bad, 0}).view({2, 3})),
        /*rounded=*/true);  // jitc's exp and eager's round 1 ulp apart for about one input in seven
    check_raises_as_eager<c10::Error>(
        "index_select of an index_select" + tag,
        [&x](const at::Tensor& i, const at::Tensor& j) { return x.index_select(0, i).index_select(0, j).neg(); },
        std::make_tuple(longs({0, 4, 1}), longs({0, 2})), std::make_tuple(longs({0, bad, 1}), longs({0, 2})));
  }
  for (auto dtype : {at::kInt, at::kLong}) {
    const auto a = at::arange(1, 7, dtype), b = at::tensor({1, 2, 3, 1, 2, 3}).to(dtype), zero = at::tensor({1, 2, 0, 1, 0, 3}).to(dtype);
    check_raises_as_eager<c10::Error>(
        std::string("floor division, a slice read ") + c10::toString(dtype),
        [](const at::Tensor& a, const at::Tensor& b) { return (at::div(a, b, "floor") + 1).slice(0, 0, 2); }, std::make_tuple(a, b),
        std::make_tuple(a, zero));
    check_raises_as_eager<c10::Error>(
        std::string("remainder, every other element read ") + c10::toString(dtype),
        [](const at::Tensor& a, const at::Tensor& b) { return at::remainder(a, b).slice(0, 1, 6, 2) * 3; }, std::make_tuple(a, b),
        std::make_tuple(a, zero));
  }
}

// A failed check re-runs the call through eager replay to raise eager's error: draws and writes made by
// the program before the check must not happen twice.
TEST_CASE("a failed run-time check draws and writes as often as eager's failing call", "[inductor][semantics]") {
  const auto table = at::randn({5, 3});
  // index_put_ with accumulate runs in place (reinplaced), before the embedding's kernel.
  const auto row = longs({1});
  auto fn = [&table, &row](const at::Tensor& x, const at::Tensor& i) {
    x.index_put_({row}, at::ones({1}), /*accumulate=*/true);
    const auto noise = at::rand({4});
    return at::embedding(table, i) * 2 + noise.sum();
  };
  const auto good = longs({0, 4, 2}), bad = longs({0, 7, 2});
  auto after_failure = [&](auto& f) {
    at::manual_seed(3);
    auto x = at::zeros({2});
    std::string error;
    try {
      f(x, bad);
    } catch (const c10::Error& e) {
      error = e.what_without_backtrace();
    }
    return std::make_tuple(error, x, at::rand({2}));
  };
  auto compiled = jitc::compile(fn);
  for (int k = 0; k < 2; ++k) compiled(at::zeros({2}), good);
  REQUIRE(compiled.stats().programs_compiled == 1);
  const auto [want_error, want_x, want_next] = after_failure(fn);
  const auto [error, x, next] = after_failure(compiled);
  REQUIRE(want_error != "");
  CHECK(error == want_error);
  CHECK(identical(x, want_x));
  CHECK(identical(next, want_next));
}

TEST_CASE("cross_entropy and nll_loss match eager, ignored targets included, and raise eager's error for a target out of range",
          "[inductor][semantics]") {
  const auto x = at::randn({6, 9}), targets = longs({0, 8, -100, 3, 3, 1});
  for (int64_t reduction : {at::Reduction::None, at::Reduction::Mean, at::Reduction::Sum})
    for (auto dtype : {at::kFloat, at::kDouble}) {
      const std::string tag = " reduction " + std::to_string(reduction) + " " + c10::toString(dtype);
      auto cross_entropy = [reduction](const at::Tensor& x, const at::Tensor& t) { return at::cross_entropy_loss(x, t, {}, reduction); };
      auto nll = [reduction](const at::Tensor& x, const at::Tensor& t) { return at::nll_loss(at::log_softmax(x, 1), t, {}, reduction, 3); };
      check_close("cross_entropy" + tag, cross_entropy, x.to(dtype), targets);
      check_close("nll_loss over log_softmax, ignore_index 3" + tag, nll, x.to(dtype), longs({0, 8, 3, 3, 5, 1}));
      check_close("cross_entropy, every target ignored (mean: nan as eager)" + tag, cross_entropy, x.to(dtype),
                  at::full({6}, -100, at::kLong));
      for (int64_t bad : {9, -1, 100})
        check_raises_as_eager<c10::Error>("cross_entropy target " + std::to_string(bad) + tag, cross_entropy,
                                          std::make_tuple(x.to(dtype), targets),
                                          std::make_tuple(x.to(dtype), longs({0, 8, -100, bad, 3, 1})), /*rounded=*/true);
    }
}

TEST_CASE("integer division and remainder by zero raise eager's ZeroDivisionError from compiled programs", "[inductor][semantics]") {
  using Op = at::Tensor (*)(const at::Tensor&, const at::Tensor&);
  const std::vector<std::pair<const char*, Op>> ops = {
      {"div trunc", [](const at::Tensor& a, const at::Tensor& b) { return at::div(a, b, "trunc") + 1; }},
      {"div floor", [](const at::Tensor& a, const at::Tensor& b) { return at::div(a, b, "floor") + 1; }},
      {"floor_divide", [](const at::Tensor& a, const at::Tensor& b) { return at::floor_divide(a, b) + 1; }},
      {"remainder", [](const at::Tensor& a, const at::Tensor& b) { return at::remainder(a, b) + 1; }},
      {"fmod", [](const at::Tensor& a, const at::Tensor& b) { return at::fmod(a, b) + 1; }},
  };
  for (auto dtype : {at::kInt, at::kLong, at::kByte, at::kShort})
    for (const auto& [name, op] : ops) {
      const auto a = at::arange(1, 7, dtype), b = at::tensor({1, 2, 3, 1, 2, 3}).to(dtype), zero = at::tensor({1, 2, 0, 1, 2, 3}).to(dtype);
      check_raises_as_eager<c10::Error>(std::string(name) + " " + c10::toString(dtype), op, std::make_tuple(a, b),
                                        std::make_tuple(a, zero));
    }
}

TEST_CASE("fmod remainder and floor division of floats match eager at exact multiples, zeros and infinities", "[inductor][semantics]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> values = {0.3, 1.0, 5.9, -5.9, 0.0, -0.0, 7.0, -7.0, 1e-30, 3e38, inf, -inf, nan, 0.7, 2.5};
  const std::vector<double> divisors = {0.1, -0.1, inf, -inf, 0.0, -0.0, 3.0, -3.0, 2.5, 1e-3, nan};
  std::vector<double> a, b;
  for (double x : values)
    for (double y : divisors) a.push_back(x), b.push_back(y);
  for (auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    const auto x = at::tensor(a, at::kDouble).to(dtype), y = at::tensor(b, at::kDouble).to(dtype);
    const std::string t = c10::toString(dtype);
    auto fmod = [](const at::Tensor& x, const at::Tensor& y) { return at::fmod(x, y); };
    auto remainder = [](const at::Tensor& x, const at::Tensor& y) { return at::remainder(x, y); };
    auto floor_divide = [](const at::Tensor& x, const at::Tensor& y) { return at::floor_divide(x, y); };
    auto div_floor = [](const at::Tensor& x, const at::Tensor& y) { return at::div(x, y, "floor"); };
    auto fmod_number = [](const at::Tensor& x) { return at::fmod(x, 0.1); };
    auto remainder_number = [](const at::Tensor& x) { return at::remainder(x, -0.3); };
    auto floor_divide_number = [](const at::Tensor& x) { return at::floor_divide(x, 0.1); };
    check_identical_to_scalar_loop("fmod " + t, fmod, x, y);
    check_identical_to_scalar_loop("remainder " + t, remainder, x, y);
    check_identical_to_scalar_loop("floor_divide " + t, floor_divide, x, y);
    check_identical_to_scalar_loop("div floor " + t, div_floor, x, y);
    check_identical_to_scalar_loop("fmod by a number " + t, fmod_number, x);
    check_identical_to_scalar_loop("remainder by a number " + t, remainder_number, x);
    check_identical_to_scalar_loop("floor_divide by a number " + t, floor_divide_number, x);
  }
  const auto one = at::ones({1});
  check_identical(
      "1.0 // 0.1 is 9 as in eager", [](const at::Tensor& x) { return at::floor_divide(x, 0.1); }, one);
}

TEST_CASE("shifts by negative amounts and by the width or more match eager", "[inductor][semantics]") {
  std::vector<int64_t> amounts;
  for (int64_t s = -3; s <= 70; ++s) amounts.push_back(s);
  for (auto dtype : {at::kByte, at::kChar, at::kShort, at::kInt, at::kLong}) {
    const auto n = static_cast<int64_t>(amounts.size());
    const auto x = (at::arange(n, at::kLong) * 37 - 1000).to(dtype), s = longs(amounts).to(dtype);
    const std::string t = c10::toString(dtype);
    check_identical(
        "left " + t, [](const at::Tensor& x, const at::Tensor& s) { return at::bitwise_left_shift(x, s); }, x, s);
    check_identical(
        "right " + t, [](const at::Tensor& x, const at::Tensor& s) { return at::bitwise_right_shift(x, s); }, x, s);
  }
}

TEST_CASE("float32 var and std are finite where eager's are (ATen accumulates in double on the CPU)", "[inductor][semantics]") {
  const auto large = at::tensor({3e38f, 3e38f, 3e38f, 2e38f, 1e20f, -1e20f}).view({2, 3});
  for (const auto& x : {large, at::full({4, 1000}, 2e38f), at::tensor({1e20f, -1e20f, 3e19f, 0.f})}) {
    auto var = [](const at::Tensor& x) { return x.var(-1); };
    auto std_all = [](const at::Tensor& x) { return x.std(); };
    auto var_mean = [](const at::Tensor& x) { return std::get<0>(at::var_mean(x, {-1})) + std::get<1>(at::var_mean(x, {-1})); };
    check_close("var", var, x);
    check_close("std", std_all, x);
    check_close("var_mean", var_mean, x);
  }
}

TEST_CASE("integer max and min over extreme values match eager", "[inductor][semantics]") {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  const auto x = longs({lo, lo, lo, hi, hi, hi}).view({2, 3});
  check_identical(
      "amax", [](const at::Tensor& x) { return x.amax(-1); }, x);
  check_identical(
      "amin", [](const at::Tensor& x) { return x.amin(-1); }, x);
  check_identical(
      "argmax", [](const at::Tensor& x) { return x.argmax(-1); }, x);
  check_identical(
      "max over dim 0", [](const at::Tensor& x) { return x.amax(0); }, x);
}

TEST_CASE("numbers meet half and bfloat16 tensors as in eager: rounded to the tensor's dtype, except in mul and div",
          "[inductor][semantics]") {
  for (auto dtype : {at::kHalf, at::kBFloat16}) {
    const auto x = (at::randn({4096}, at::TensorOptions().dtype(dtype)) * 50).contiguous();
    const auto tenth = at::full({64}, 0.1).to(dtype);  // the dtype's nearest value to 0.1: equal to the number 0.1 in eager
    const std::string t = c10::toString(dtype);
    check_identical(
        "eq " + t, [](const at::Tensor& x) { return x == 0.1; }, tenth);
    check_identical(
        "lt " + t, [](const at::Tensor& x) { return x < 0.1; }, tenth);
    check_identical(
        "ge " + t, [](const at::Tensor& x) { return x >= 0.1; }, tenth);
    for (double v : {0.1, 1.0 / 3, 0.7777, 2.3456}) {
      const std::string tag = " " + std::to_string(v) + " " + t;
      check_identical(
          "add" + tag, [v](const at::Tensor& x) { return x + v; }, x);
      check_identical(
          "rsub" + tag, [v](const at::Tensor& x) { return v - x; }, x);
      check_identical(
          "mul" + tag, [v](const at::Tensor& x) { return x * v; }, x);
      check_identical(
          "div" + tag, [v](const at::Tensor& x) { return x / v; }, x);
      check_identical(
          "add alpha" + tag, [v](const at::Tensor& x) { return at::add(x, x, v); }, x);
      check_identical(
          "pow" + tag, [v](const at::Tensor& x) { return at::pow(x.abs(), v); }, x);
      check_identical(
          "clamp" + tag, [v](const at::Tensor& x) { return x.clamp(-v, v); }, x);
    }
  }
}

TEST_CASE("float to integer casts out of range, of NaN and of infinities match eager's CPU conversion", "[inductor][semantics]") {
  // x86-64 eager: int64 and int32 get the truncated value or the type's minimum; int16 and int8 go
  // through int32, uint8 through int64, keeping the low bits (int8(300.0) == 44, uint8(-1.0) == 255).
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> values = {1e10,
                                      -1e10,
                                      nan,
                                      inf,
                                      -inf,
                                      300.0,
                                      -1.0,
                                      -129.5,
                                      70000.0,
                                      3e9,
                                      -3e9,
                                      1e19,
                                      -1e19,
                                      -0.0,
                                      3000000005.0,
                                      5e9 + 7,
                                      1099511627779.0,
                                      -1099511627779.0,
                                      196615.0,
                                      -70000.0,
                                      2147483647.0,
                                      -2147483648.0,
                                      2147483648.0,
                                      9.2233720368547758e18,
                                      -9.2233720368547758e18,
                                      255.9,
                                      -0.9};
  std::vector<double> many;
  for (int i = 0; i < 8; ++i) many.insert(many.end(), values.begin(), values.end());  // vectorized loops too
  for (auto from : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    const auto x = at::tensor(many, at::kDouble).to(from);
    for (auto to : {at::kLong, at::kInt, at::kShort, at::kChar, at::kByte, at::kBool}) {
      const std::string name = std::string(c10::toString(from)) + " to " + c10::toString(to);
      check_identical(
          name, [to](const at::Tensor& x) { return x.to(to); }, x);
      check_identical(
          name + " after math", [to](const at::Tensor& x) { return (x * 2).to(to) + 1; }, x);
    }
  }
}

TEST_CASE("the signed minimum divided by -1 gives eager's results, not a trap", "[inductor][semantics]") {
  for (auto dtype : {at::kChar, at::kShort, at::kInt, at::kLong}) {
    const int64_t lo = dtype == at::kChar    ? -128
                       : dtype == at::kShort ? -32768
                       : dtype == at::kInt   ? std::numeric_limits<int32_t>::min()
                                             : std::numeric_limits<int64_t>::min();
    const auto a = longs({lo, lo, 7, -7, lo, lo + 1}).to(dtype).repeat({8}), b = longs({-1, 1, -1, -1, 2, -1}).to(dtype).repeat({8});
    const std::string t = c10::toString(dtype);
    check_identical(
        "floor_divide " + t, [](const at::Tensor& a, const at::Tensor& b) { return at::floor_divide(a, b); }, a, b);
    check_identical(
        "div floor " + t, [](const at::Tensor& a, const at::Tensor& b) { return at::div(a, b, "floor"); }, a, b);
    check_identical(
        "remainder " + t, [](const at::Tensor& a, const at::Tensor& b) { return at::remainder(a, b); }, a, b);
    check_identical(
        "fmod " + t, [](const at::Tensor& a, const at::Tensor& b) { return at::fmod(a, b); }, a, b);
    // eager's own trunc division traps (SIGFPE) on int32 and int64 here; int8 and int16 divide in int
    if (dtype == at::kChar || dtype == at::kShort)
      check_identical(
          "div trunc " + t, [](const at::Tensor& a, const at::Tensor& b) { return at::div(a, b, "trunc"); }, a, b);
  }
}

TEST_CASE("an in-place write into an argument fused beside an empty value is not lost", "[inductor][semantics]") {
  // The fill's [1] value was stored once per row of a kernel whose element loop is [0]: never written,
  // and the copy back into the argument wrote uninitialized memory (found by the edge fuzzer, seed 98).
  auto fn = [](const at::Tensor& empty, const at::Tensor& x, const at::Tensor& flags) {
    const at::Tensor r = (flags < empty).reciprocal();
    x.relu_();
    x.fill_(31);
    return std::make_tuple(x - empty, r);
  };
  auto args = [] {
    const at::Tensor base = at::arange(8, at::kLong);
    return std::make_tuple(at::zeros({0}, at::kLong), base.slice(0, 3, 5, 2), at::zeros({1}, at::kBool).expand({0}));
  };
  auto compiled = jitc::compile(fn);
  std::apply(compiled, args());
  const auto got = args(), want = args();
  const auto [g0, g1] = std::apply(compiled, got);
  const auto [w0, w1] = std::apply(fn, want);
  CHECK(compiled.stats().programs_compiled == 1);
  CHECK(identical(std::get<1>(got), std::get<1>(want)));
  CHECK(identical(std::get<1>(got).as_strided({8}, {1}, 0), std::get<1>(want).as_strided({8}, {1}, 0)));
  CHECK(identical(g0, w0));
  CHECK(identical(g1, w1));
}

TEST_CASE("the constant -0.0 keeps its sign in compiled kernels", "[inductor][semantics]") {
  // A float constant was materialized as `fadd c, 0.0`, which turns -0.0 into +0.0 (edge fuzzer, seeds
  // 74 and 128): x * -0.0, x + -0.0 and x / -0.0 took the wrong sign.
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> values = {-0.0, 0.0, 1.5, -2.0, inf, -inf, 7.0, -1e-3};
  for (auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    const auto x = at::tensor(values, at::kDouble).to(dtype).repeat({4});
    const std::string t = c10::toString(dtype);
    check_identical(
        "mul -0.0 " + t, [](const at::Tensor& x) { return x * -0.0; }, x);
    check_identical(
        "add -0.0 " + t, [](const at::Tensor& x) { return x + -0.0; }, x);
    check_identical(
        "div -0.0 " + t, [](const at::Tensor& x) { return x / -0.0; }, x);
    check_identical(
        "floor_divide -0.0 " + t, [](const at::Tensor& x) { return at::floor_divide(x, -0.0); }, x);
    check_identical(
        "where -0.0 " + t, [](const at::Tensor& x) { return at::where(x > 0, x, -0.0); }, x);
    check_identical(
        "full -0.0 " + t, [](const at::Tensor& x) { return at::full_like(x, -0.0) - 0.0; }, x);
  }
}

TEST_CASE("views of an argument view written in place read the written values", "[inductor][semantics]") {
  // Functionalization replaces the in-place result by a fresh contiguous value; the views taken of it
  // kept the traced layout (the argument slice's storage offset 2) and read past the new buffer's
  // end (edge fuzzer, seed 160).
  auto fn = [](const at::Tensor& x, const at::Tensor& y) {
    x.remainder_(y);
    return std::make_tuple(at::hardtanh(x.reshape({4, 1}), -0.5, 2.0), x.bitwise_not());
  };
  auto args = [] { return std::make_tuple(at::tensor({9, 8, -128, 127, -5, 6}, at::kChar).slice(0, 2, 6), at::tensor({100}, at::kChar)); };
  auto compiled = jitc::compile(fn);
  std::apply(compiled, args());
  const auto got = args(), want = args();
  const auto [g0, g1] = std::apply(compiled, got);
  const auto [w0, w1] = std::apply(fn, want);
  CHECK(compiled.stats().programs_compiled == 1);
  CHECK(identical(g0, w0));
  CHECK(identical(g1, w1));
  CHECK(identical(std::get<0>(got).as_strided({6}, {1}, 0), std::get<0>(want).as_strided({6}, {1}, 0)));

  auto transposed = [](const at::Tensor& x) {
    x.mul_(2);
    return x.unsqueeze(0) + x.narrow(1, 1, 2).sum();
  };
  const auto base = at::arange(12, at::kFloat).view({3, 4});
  auto t = jitc::compile(transposed);
  t(base.clone().t());
  const auto a = base.clone(), b = base.clone();
  CHECK(identical(t(a.t()), transposed(b.t())));
  CHECK(identical(a, b));
}

TEST_CASE("a 0-dim float tensor meets half and bfloat16 tensors rounded to their dtype, logical ops included", "[inductor][semantics]") {
  // TensorIterator casts every operand to the common dtype first: a 0-dim float tensor holding 1e-40 is
  // half's 0 (logical_or false; edge fuzzer, seed 203), and 0.1f is half(0.1) in add and eq.
  for (auto dtype : {at::kHalf, at::kBFloat16}) {
    const auto x = at::tensor({0.0, -0.0, 0.1, 1.0, 2.5, -7.0}, at::kDouble).to(dtype).repeat({8});
    const std::string t = c10::toString(dtype);
    for (float v : {1e-40f, 0.1f, 0.0f, 2.3456f, 1e-8f}) {
      const auto s = at::scalar_tensor(v, at::kFloat);
      const std::string tag = " " + std::to_string(v) + " " + t;
      check_identical(
          "logical_or" + tag, [](const at::Tensor& x, const at::Tensor& s) { return at::logical_or(x, s); }, x, s);
      check_identical(
          "logical_and" + tag, [](const at::Tensor& x, const at::Tensor& s) { return at::logical_and(s, x); }, x, s);
      check_identical(
          "logical_xor" + tag, [](const at::Tensor& x, const at::Tensor& s) { return at::logical_xor(x, s); }, x, s);
      check_identical(
          "add" + tag, [](const at::Tensor& x, const at::Tensor& s) { return x + s; }, x, s);
      check_identical(
          "eq" + tag, [](const at::Tensor& x, const at::Tensor& s) { return x == s; }, x, s);
      check_identical(
          "maximum" + tag, [](const at::Tensor& x, const at::Tensor& s) { return at::maximum(x, s) + 0; }, x, s);
    }
  }
}

TEST_CASE("clamp, hardtanh and relu6 keep -0.0 at a bound of 0 as eager does", "[inductor][semantics]") {
  // max(x, bound) took the bound on ties: clamp_min(-0.0, 0) was +0.0 (edge fuzzer, seeds 1240, 1572).
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    const auto x = at::tensor({-0.0, 0.0, -1.0, 2.0, inf, -inf, nan, 6.0, -0.0}, at::kDouble).to(dtype).repeat({5});
    const std::string t = c10::toString(dtype);
    check_identical(
        "clamp_min 0 " + t, [](const at::Tensor& x) { return x.clamp_min(0); }, x);
    check_identical(
        "clamp_min -0.0 " + t, [](const at::Tensor& x) { return x.clamp_min(-0.0); }, x);
    check_identical(
        "clamp_max 0 " + t, [](const at::Tensor& x) { return x.clamp_max(0.0); }, x);
    check_identical(
        "clamp -0.0 0 " + t, [](const at::Tensor& x) { return x.clamp(-0.0, 0.0); }, x);
    check_identical(
        "relu6 " + t, [](const at::Tensor& x) { return at::relu6(x); }, x);
    check_identical(
        "hardtanh " + t, [](const at::Tensor& x) { return at::hardtanh(x, 0.0, 6.0); }, x);
  }
}

TEST_CASE("NaN bounds of clamp give what eager gives: x with one bound, NaN with two and from clamp_min", "[inductor][semantics]") {
  // eager's clamp with one bound runs std::max(a, bound): a NaN bound keeps x (edge fuzzer, seed 1023)
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (auto dtype : {at::kFloat, at::kDouble, at::kHalf}) {
    const auto x = at::tensor({7.0, -0.5, -0.0, nan, inf}, at::kDouble).to(dtype).repeat({6});
    const std::string t = c10::toString(dtype);
    check_identical(
        "clamp(min=nan) " + t, [nan](const at::Tensor& x) { return x.clamp(nan); }, x);
    check_identical(
        "clamp(max=nan) " + t, [nan](const at::Tensor& x) { return x.clamp(std::nullopt, nan); }, x);
    check_identical(
        "clamp_(nan) on an argument " + t, [nan](const at::Tensor& x) { return x.clone().clamp_(nan) * 2; }, x);
    check_identical(
        "clamp(nan, 5) " + t, [nan](const at::Tensor& x) { return x.clamp(nan, 5.0); }, x);
    check_identical(
        "clamp_min(nan) " + t, [nan](const at::Tensor& x) { return x.clamp_min(nan); }, x);
    check_identical(
        "clamp_max(nan) " + t, [nan](const at::Tensor& x) { return x.clamp_max(nan); }, x);
  }
}

TEST_CASE("addcmul and addcdiv multiply by value first, as ATen's CPU kernel does", "[inductor][semantics]") {
  // self + value * t1 / t2 left to right: 2 * 3e38 overflows before the division (edge fuzzer, seed 1164)
  const auto a = at::tensor({1.0f, 0.0f, -2.0f, 3e38f, 1e-30f, 5.0f}).repeat({8}),
             b = at::tensor({3e38f, 2e38f, -3e38f, 1.0f, 1e-30f, 3.0f}).repeat({8});
  const auto c = at::tensor({2.0f, 4.0f, 3e38f, 3e-39f, 7.0f, 0.1f}).repeat({8});
  check_identical(
      "addcdiv", [](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) { return at::addcdiv(a, b, c, 2); }, a, b, c);
  check_identical(
      "addcmul", [](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) { return at::addcmul(a, b, c, 3); }, a, b, c);
}

TEST_CASE("a fractional number becomes true in a bool tensor, as in eager", "[inductor][semantics]") {
  // The bool constant of 0.1 was int64(0.1) == 0: false (edge fuzzer, seed 2160).
  const auto flags = at::tensor({1, 0, 1, 0}).to(at::kBool).repeat({4});
  check_identical(
      "full_like 0.1", [](const at::Tensor& b) { return at::full_like(b, 0.1).to(at::kFloat) + 1; }, flags);
  check_identical(
      "full_like -0.5", [](const at::Tensor& b) { return at::full_like(b, -0.5) ^ b; }, flags);
  check_identical(
      "masked_fill 0.25", [](const at::Tensor& b) { return b.masked_fill(b.logical_not(), 0.25) * 3; }, flags);
}

TEST_CASE("uint8 floor division and remainder of values past 127 match eager (no sign)", "[inductor][semantics]") {
  const auto a = at::tensor({200, 255, 128, 7, 0, 250}, at::kByte), b = at::tensor({3, 7, 255, 200, 9, 1}, at::kByte);
  check_identical(
      "floor_divide uint8", [](const at::Tensor& a, const at::Tensor& b) { return at::floor_divide(a, b); }, a, b);
  check_identical(
      "div floor uint8", [](const at::Tensor& a, const at::Tensor& b) { return at::div(a, b, "floor"); }, a, b);
  check_identical(
      "remainder uint8", [](const at::Tensor& a, const at::Tensor& b) { return at::remainder(a, b); }, a, b);
  check_identical(
      "sign uint8", [](const at::Tensor& a) { return at::sign(a); }, a);
}

TEST_CASE("pow of half (std::pow) and bfloat16 (sqrt) by 0.5 and -0.5 at -inf and -0 matches eager", "[inductor][semantics]") {
  const double inf = std::numeric_limits<double>::infinity();
  for (auto dtype : {at::kHalf, at::kBFloat16}) {
    const auto x = at::tensor({-inf, -0.0, 0.0, 4.0, inf, 2.0}, at::kDouble).to(dtype);
    const std::string t = c10::toString(dtype);
    check_identical(
        "pow 0.5 " + t, [](const at::Tensor& x) { return at::pow(x, 0.5); }, x);
    check_identical(
        "pow -0.5 " + t, [](const at::Tensor& x) { return at::pow(x, -0.5); }, x);
  }
}

TEST_CASE("a reduction kept to one element then expanded to no elements matches eager", "[inductor][semantics]") {
  const auto x = at::randn({5}, at::kDouble);
  check_identical(
      "mean expand 0", [](const at::Tensor& x) { return x.mean(0, true).expand({0}); }, x);
  const auto y = at::randint(0, 9, {1, 6}, at::kLong);
  check_identical(
      "max indices expand 0", [](const at::Tensor& y) { return std::get<1>(y.max(-1)).expand({0}); }, y);
}

TEST_CASE("float addcmul and every lerp round once, as ATen's FMA kernels do", "[inductor][semantics]") {
  // fma(value * t1, t2, self): a product past the float maximum does not overflow on its own (edge
  // fuzzer, seed 302958), and random values differ from a rounded product in the last bit (2 in 11).
  at::manual_seed(23);
  const auto a = at::cat({at::tensor({2.2e38f, -1.0f}), at::randn({254})}), b = at::cat({at::tensor({-3e38f, 1.0f}), at::randn({254})});
  const auto c = at::cat({at::tensor({1.4f, 2.0f}), at::randn({254})});
  check_identical(
      "addcmul fma", [](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) { return at::addcmul(a, b, c, 0.5); }, a, b, c);
  for (auto dtype : {at::kFloat, at::kDouble, at::kHalf}) {
    const auto x = at::randn({256}).to(dtype), y = at::randn({256}).to(dtype), w = at::rand({256}).to(dtype);
    const std::string t = c10::toString(dtype);
    check_identical(
        "lerp 0.3 " + t, [](const at::Tensor& x, const at::Tensor& y) { return at::lerp(x, y, 0.3); }, x, y);
    check_identical(
        "lerp 0.7 " + t, [](const at::Tensor& x, const at::Tensor& y) { return at::lerp(x, y, 0.7); }, x, y);
    check_identical(
        "lerp tensor " + t, [](const at::Tensor& x, const at::Tensor& y, const at::Tensor& w) { return at::lerp(x, y, w); }, x, y, w);
  }
}

TEST_CASE("sin of -0 is -0 in compiled float and half kernels", "[inductor][semantics]") {
  // The fast sin's range reduction fma(-0, -pi/2, -0) gave +0 (edge fuzzer, seed 307612).
  for (auto dtype : {at::kFloat, at::kHalf}) {
    const auto x = at::tensor({-0.0, 0.0, -1e-7, 1e-30, -0.0, -3e-30, -0.0, 0.0}, at::kDouble).repeat({4}).to(dtype);
    check_identical(
        "sin " + std::string(c10::toString(dtype)), [](const at::Tensor& x) { return x.sin(); }, x);
    check_identical(
        "sin and cos " + std::string(c10::toString(dtype)), [](const at::Tensor& x) { return x.sin() * x.cos(); }, x);
  }
}

TEST_CASE("integer constants wrap to their dtype as eager converts them", "[inductor][semantics]") {
  // full_like(uint8, -1) holds 255: its folded cast to float gave -1 (edge fuzzer, seed 308170).
  const auto u = at::tensor({3, 200, 0}, at::kByte);
  check_identical(
      "full_like uint8 -1 log10", [](const at::Tensor& u) { return at::log10(at::full_like(u, -1)); }, u);
  check_identical(
      "full_like uint8 -1 to float", [](const at::Tensor& u) { return at::full_like(u, -1).to(at::kFloat) + u; }, u);
  const auto i8 = at::tensor({3, -100, 0}, at::kChar);
  check_identical(
      "full_like int8 -1 to int", [](const at::Tensor& i) { return at::full_like(i, -1).to(at::kInt) * i; }, i8);
}

TEST_CASE("pow of uint8 by exponents past 127 matches eager (every bit, no sign)", "[inductor][semantics]") {
  // An exponent of 135 was read as negative: 0 (edge fuzzer, seed 309327).
  const auto a = at::arange(0, 256, 7, at::kLong).slice(0, 0, 29).to(at::kByte),
             b = at::arange(0, 256, 9, at::kLong).slice(0, 0, 29).to(at::kByte);
  check_identical(
      "pow uint8", [](const at::Tensor& a, const at::Tensor& b) { return at::pow(a, b); }, a, b);
}

TEST_CASE("add and sub with alpha, and double addcmul, are one FMA as in ATen's kernels", "[inductor][semantics]") {
  // -inf + 3 * 3e38 is -inf through an FMA, NaN through an overflowing product (fuzzer seeds 370402, 379783)
  at::manual_seed(24);
  for (auto dtype : {at::kFloat, at::kDouble, at::kHalf}) {
    const std::string t = c10::toString(dtype);
    const auto x = at::randn({256}).to(dtype), y = at::randn({256}).to(dtype);
    check_identical(
        "add alpha " + t, [](const at::Tensor& x, const at::Tensor& y) { return at::add(x, y, 0.1); }, x, y);
    check_identical(
        "sub alpha " + t, [](const at::Tensor& x, const at::Tensor& y) { return at::sub(x, y, 2.7); }, x, y);
  }
  const auto inf = at::full({32}, -std::numeric_limits<float>::infinity()), huge = at::full({32}, 3e38f);
  check_identical(
      "add alpha overflow", [](const at::Tensor& x, const at::Tensor& y) { return at::add(x, y, 3); }, inf, huge);
  const auto a = at::cat({at::full({8}, -1.7976931348623157e308, at::kDouble), at::randn({24}, at::kDouble)});
  const auto b = at::cat({at::full({8}, -2.2031, at::kDouble), at::randn({24}, at::kDouble)});
  check_identical(
      "addcmul double", [](const at::Tensor& a, const at::Tensor& b) { return at::addcmul(a, a, b, 0.5); }, a, b);
}

TEST_CASE("a product or sum over values computed in the loop is not reassociated into them", "[inductor][semantics]") {
  // `fmul reassoc` let LLVM turn prod(x / x) into prod(x) / prod(x): 0 for tiny x (fuzzer seed 336199)
  const auto x = at::tensor({0.78125f, 9.9999e-41f, -3.0002e-42f, 2.f}).view({4, 1}).expand({4, 6}).contiguous();
  check_identical(
      "prod of x / x over rows", [](const at::Tensor& x) { return (x / x).prod(1); }, x);
  check_identical(
      "prod of x / x over columns", [](const at::Tensor& x) { return (x / x).prod(0); }, x);
  // prod(pow(x, c)) became pow(prod(x), c) through a freeze: inf where eager has 0 * inf = NaN (seed 809077)
  const auto z = at::tensor({1.5f, 0.0f, 0.1f});
  check_identical(
      "prod of pow", [](const at::Tensor& z) { return at::pow(at::log2(z), 1e10).prod(-1, true); }, z);
  const auto y = at::tensor({3e38f, -3e38f, 1.f, 2.f}).view({4, 1}).expand({4, 6}).contiguous();
  check_identical(
      "sum of (x + x) - x", [](const at::Tensor& y) { return ((y + y) - y).sum(1); }, y);
}

TEST_CASE("an integer tensor meeting a half one in mul or div is rounded to half first, as in eager", "[inductor][semantics]") {
  // 2^31 - 1 becomes inf in half, and inf * 0 is NaN (fuzzer seed 328934); a 0-dim operand is not rounded
  const auto h = at::tensor({0.0, 1e-4, 2.0, -0.0}, at::kDouble).to(at::kHalf).repeat({8});
  const auto big = at::tensor({2147483647, 1}, at::kInt).view({2, 1});
  check_identical(
      "mul by int tensor", [](const at::Tensor& h, const at::Tensor& i) { return h * i; }, h, big);
  check_identical(
      "div by int tensor", [](const at::Tensor& h, const at::Tensor& i) { return h / i; }, h, big);
  check_identical(
      "mul by 0-dim float", [](const at::Tensor& h) { return h * at::scalar_tensor(1e5); }, h);
}

TEST_CASE("a softmax of an empty integer tensor runs as eager does", "[inductor][semantics]") {
  // Eager accepts it only because there is nothing to compute; the lowering made exp of uint8 (IR that
  // LLVM rejects, fuzzer seeds 635872 and 675674). Under JITC_STRICT that would fail here.
  const auto x = at::zeros({5, 0}, at::kByte);
  auto f = [](const at::Tensor& x) { return at::logsumexp(at::log_softmax(x, 1), 1, true); };
  auto compiled = jitc::compile(f);
  compiled(x);
  const at::Tensor got = compiled(x);
  CHECK(identical(got, f(x)));
}

TEST_CASE("max_pool2d and upsample_nearest2d fused give eager's values bit for bit: NaN, infinities, signed zeros, padding",
          "[inductor][semantics]") {
  at::Tensor x = at::randn({2, 3, 9, 8});
  x.index_put_({0, 0, 0, 0}, NAN);
  x.index_put_({0, 1, 2, 2}, -INFINITY);
  x.index_put_({1, 2, 4, 4}, INFINITY);
  x.index_put_({1, 0}, 0.0);  // ties of +0 and -0 in a channel of zeros
  x.index_put_({1, 0, 3, 3}, -0.0);
  x.index_put_({1, 0, 3, 4}, -0.0);
  struct Case {
    std::vector<int64_t> kernel, stride, padding, dilation;
    bool ceil;
  };
  const std::vector<Case> cases = {{{3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
                                   {{2, 2}, {}, {0, 0}, {1, 1}, false},
                                   {{3, 2}, {1, 2}, {1, 0}, {1, 1}, true},
                                   {{3, 3}, {2, 2}, {1, 1}, {2, 2}, false},
                                   {{2}, {3}, {1}, {1}, true}};
  for (auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16})
    for (const auto& k : cases) {
      const std::string tag = fmt::format("kernel {} stride {} padding {} dilation {} ceil {} {}", k.kernel, k.stride, k.padding,
                                          k.dilation, k.ceil, c10::toString(dtype));
      check_identical(
          "max_pool2d " + tag,
          [k](const at::Tensor& x) { return at::max_pool2d(x, k.kernel, k.stride, k.padding, k.dilation, k.ceil) + 0.0; }, x.to(dtype));
    }
  for (auto dtype : {at::kFloat, at::kHalf})
    for (int64_t factor : {1, 2, 4}) {
      const std::string tag = fmt::format("factor {} {}", factor, c10::toString(dtype));
      INFO("upsample_nearest2d " << tag);
      auto with_skip = [factor](const at::Tensor& x) {
        return at::cat(
                   {at::upsample_nearest2d(x, {x.size(2) * factor, x.size(3) * factor}), at::zeros_like(x).repeat({1, 1, factor, factor})},
                   1) *
               1;
      };
      CHECK(identical(compiled_result(with_skip, x.to(dtype)), with_skip(x.to(dtype))));
      auto with_scales = [factor](const at::Tensor& x) {
        return at::upsample_nearest2d(x, {x.size(2) * factor, x.size(3) * factor}, double(factor), double(factor)) - 1;
      };
      CHECK(identical(compiled_result(with_scales, x.to(dtype)), with_scales(x.to(dtype))));
    }
  // Factors that are not powers of two (ATen's float index formula) run as extern calls, still eager's.
  auto by_three = [](const at::Tensor& x) { return at::upsample_nearest2d(x, {27, 24}) + 0.0; };
  CHECK(identical(compiled_result(by_three, x), by_three(x)));
}

TEST_CASE("tril and triu keep eager's elements and zeros, NaN masked out, every dtype and diagonal", "[inductor][semantics]") {
  at::Tensor x = at::randn({2, 5, 7});
  x.index_put_({0, 4, 0}, NAN);
  x.index_put_({1, 0, 6}, NAN);
  for (auto dtype : {at::kFloat, at::kHalf, at::kInt, at::kBool})
    for (int64_t diagonal : {-2, 0, 1, 9}) {
      const std::string tag = fmt::format("diagonal {} {}", diagonal, c10::toString(dtype));
      const at::Tensor input = dtype == at::kBool ? x > 0 : x.to(dtype);
      check_identical(
          "tril " + tag, [diagonal](const at::Tensor& x) { return x.tril(diagonal).logical_not(); }, input);
      check_identical(
          "triu " + tag, [diagonal](const at::Tensor& x) { return x.triu(diagonal) * 1; }, input);
    }
}
