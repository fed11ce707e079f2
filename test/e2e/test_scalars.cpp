// Automatic dynamic scalars: a double or int64_t argument whose value changes becomes a run-time value
// on the recompile (issue 23), under both backends; marks keep it static; logs say what happened.
#include "support/log_capture.h"
#include "support/parity.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <vector>

using jitc::testing::LogCapture;

namespace {

std::vector<double> twenty_doubles() {
  std::vector<double> v;
  for (int k = 0; k < 20; ++k) v.push_back(0.25 + 0.37 * k);
  return v;
}

jitc::Options with_backend(jitc::Backend backend) {
  jitc::Options o;
  o.backend = backend;
  return o;
}

// Every call: the compiled result equals eager's (to float32 rounding of a fused chain).
void check_close(const at::Tensor& got, const at::Tensor& want) { CHECK(jitc::testing::difference(got, want, {1e-6, 1e-6}) == ""); }

}  // namespace

TEST_CASE("20 double values: two compiles, one entry, every result eager's", "[dynamic][scalars]") {
  const auto backend = GENERATE(jitc::Backend::kInductor, jitc::Backend::kEager);
  auto fn = [](const at::Tensor& x, double scale) { return at::gelu(x * scale) + at::clamp_max(x, scale) - scale; };
  auto f = jitc::compile(fn, with_backend(backend));
  const auto x = at::randn({8, 33});
  // gelu(x * scale) - scale cancels terms near 30: judged against float64, as eager's own error is ulps of 30.
  const auto check_accurate = [&](double scale) {
    CHECK(jitc::testing::difference_from_exact(f(x, scale), fn(x, scale), fn(x.to(at::kDouble), scale)) == "");
  };
  for (double scale : twenty_doubles()) check_accurate(scale);
  for (double scale : twenty_doubles()) check_accurate(scale);  // now hits
  const auto s = f.stats();
  CHECK(s.compiles == 2);
  CHECK(s.entries == 1);
  CHECK(s.eager_fallbacks == 0);
  CHECK(s.size_checks == 18);  // each new value is traced once more to confirm the graph
  CHECK(s.hits == 20);
  if (backend == jitc::Backend::kInductor) CHECK(s.programs_compiled == 1);  // one program serves every value
}

TEST_CASE("20 int values used in a shape and in arithmetic: two compiles, one entry", "[dynamic][scalars]") {
  const auto backend = GENERATE(jitc::Backend::kInductor, jitc::Backend::kEager);
  SECTION("narrow(1, 0, n) * n + 1") {
    auto fn = [](const at::Tensor& x, int64_t n) { return x.narrow(1, 0, n) * n + 1; };
    auto f = jitc::compile(fn, with_backend(backend));
    const auto x = at::randn({4, 32});
    for (int64_t n = 2; n < 22; ++n) {
      const auto r = f(x, n);
      CHECK(r.sizes() == at::IntArrayRef{4, n});
      check_close(r, fn(x, n));
    }
    const auto s = f.stats();
    CHECK(s.compiles == 2);
    CHECK(s.entries == 1);
    CHECK(s.eager_fallbacks == 0);
  }
  SECTION("x.view({n, -1}) where n is x's batch size (duck sizing: n shares the size's symbol)") {
    auto fn = [](const at::Tensor& x, int64_t n) { return x.view({n, -1}) * n; };
    auto f = jitc::compile(fn, with_backend(backend));
    for (int64_t n = 2; n < 22; ++n) {
      const auto x = at::randn({n, 2, 3});
      check_close(f(x, n), fn(x, n));
    }
    const auto s = f.stats();
    CHECK(s.compiles == 2);
    CHECK(s.entries == 1);
    const auto x = at::randn({6, 2, 3});
    check_close(f(x, 4), fn(x, 4));  // n no longer equals the size: its guard fails, and the call re-traces
    CHECK(f.stats().compiles == 3);
    REQUIRE(f.stats().recompile_reasons.size() == 2);
    CHECK_THAT(f.stats().recompile_reasons[1], Catch::Contains("args[1] == args[0].size()[0]"));
  }
}

TEST_CASE("ints 0 and 1 specialize as sizes do", "[dynamic][scalars]") {
  auto fn = [](const at::Tensor& x, int64_t n) { return x * n + n; };
  auto f = jitc::compile(fn);
  const auto x = at::randn({5});
  for (int64_t n : {3, 4, 5, 0, 1, 6, 0, 1}) check_close(f(x, n), fn(x, n));
  const auto s = f.stats();
  CHECK(s.compiles == 4);  // 3 then {3, 4} symbolic; 0 and 1 get static entries
  CHECK(s.entries == 3);
  CHECK(s.hits == 2);
  CHECK(s.size_checks == 2);
}

TEST_CASE("a C++ branch on a double: every value's result is eager's", "[dynamic][scalars]") {
  const auto backend = GENERATE(jitc::Backend::kInductor, jitc::Backend::kEager);
  auto fn = [](const at::Tensor& x, double scale) { return scale > 0 ? x * scale : at::exp(x) - scale; };
  auto f = jitc::compile(fn, with_backend(backend));
  const auto x = at::randn({16});
  for (double scale : {0.5, 0.75, -0.5, 1.5, -0.75, -2.0, 2.5, -3.0, 0.5, -0.5}) check_close(f(x, scale), fn(x, scale));
  const auto s = f.stats();
  CHECK(s.eager_fallbacks == 0);
  CHECK(s.compiles == 4);  // 0.5 and 0.75 make one symbolic entry, -0.5 and -0.75 the other
  CHECK(s.entries == 2);
}

TEST_CASE("a double computed from the argument in C++ keeps the entries static", "[dynamic][scalars]") {
  auto fn = [](const at::Tensor& x, double scale) { return x * (scale * 2); };
  auto f = jitc::compile(fn);
  const auto x = at::randn({16});
  for (double scale : {0.5, 0.75, 1.5}) check_close(f(x, scale), fn(x, scale));
  CHECK(f.stats().compiles == 3);
  CHECK(f.stats().entries == 3);
}

TEST_CASE("mark_static and dynamic=false keep scalar arguments static and mark_dynamic outranks dynamic=false", "[dynamic][scalars]") {
  auto fn = [](const at::Tensor& x, double scale, int64_t n) { return x * scale + n; };
  const auto x = at::randn({16});
  auto run = [&](jitc::Options o) {
    auto f = jitc::compile(fn, o);
    for (int k = 0; k < 4; ++k) check_close(f(x, 0.5 + k, 2 + k), fn(x, 0.5 + k, 2 + k));
    return f.stats();
  };
  CHECK(run(jitc::Options().mark_static(1).mark_static(2)).compiles == 4);
  jitc::Options off;
  off.dynamic = false;
  CHECK(run(off).compiles == 4);
  CHECK(run(jitc::Options().mark_static(1)).compiles == 4);  // the double's value still differs
  auto on = off;
  on.mark_dynamic(1).mark_dynamic(2);
  const auto s = run(on);
  CHECK(s.compiles == 2);
  CHECK(s.entries == 1);
}

TEST_CASE("JITC_LOGS=dynamic tells when a scalar becomes dynamic and reasons name the scalar guard", "[dynamic][scalars][logging]") {
  LogCapture logs("dynamic");
  jitc::Options o;
  o.arg_names = {"x", "L['scale']"};
  auto f = jitc::compile([](const at::Tensor& x, double scale) { return x * scale; }, o);
  const auto x = at::randn({4});
  f(x, 0.5);
  f(x, 0.75);
  f(x, 1.25);
  CHECK(logs.contains("automatic dynamic L['scale'] 0.5 != 0.75"));
  CHECK(logs.contains("create_symbol s0 = 0.75 for L['scale'] (a double argument read at run time)"));
  CHECK(logs.contains("s0=1.25 follow the symbolic graph"));
  const auto s = f.stats();
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK_THAT(s.recompile_reasons[0], Catch::Matches(R"(\d+/0: L\['scale'\] == 0\.5)"));
}

TEST_CASE("an int symbol and a run-time double in the same place are different programs", "[dynamic][scalars]") {
  // Both symbolic graphs are mul.Scalar of the argument: the compile cache must not serve one for the other.
  auto by_int = jitc::compile([](const at::Tensor& x, int64_t n) { return x * n; });
  auto by_double = jitc::compile([](const at::Tensor& x, double s) { return x * s; });
  const auto x = at::randn({64});
  for (int64_t n : {2, 3, 4, 5}) check_close(by_int(x, n), x * n);
  for (double s : {2.5, 3.5, 4.5, 5.5}) check_close(by_double(x, s), x * s);
  for (double s : {2.5, 3.5, 4.5, 5.5}) check_close(by_double(x, s), x * s);
  CHECK(by_double.stats().hits == 4);
}
