// Bad inputs give eager's error or an eager fallback with a warning: never a crash, never a wrong result.
// (A wrong argument count or C++ type does not compile: the compiled function has the callable's signature.)
#include "support/parity.h"
#include "support/log_capture.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

using jitc::testing::LogCapture;

TEST_CASE("an undefined tensor argument gives eager's error, not a crash", "[bad_input]") {
  auto f = jitc::compile([](const at::Tensor& x) { return x + 1; });
  CHECK_THROWS_AS(f(at::Tensor()), c10::Error);
  CHECK(at::equal(f(at::zeros({2})), at::ones({2})));
}

TEST_CASE("mixed devices give eager's error", "[bad_input]") {
  auto f = jitc::compile([](const at::Tensor& a, const at::Tensor& b) { return a + b; });
  const auto cpu = at::ones({2, 2});
  const auto meta = at::empty({2, 2}, at::device(at::kMeta));
  CHECK_THROWS_AS(f(cpu, meta), c10::Error);
  CHECK_THROWS_AS(cpu + meta, c10::Error);
  CHECK(at::equal(f(cpu, cpu), cpu * 2));
}

TEST_CASE("sparse arguments run eagerly with one warning", "[bad_input]") {
  LogCapture logs;
  auto f = jitc::compile([](const at::Tensor& x) { return x * 2; });
  const auto dense = at::eye(3);
  const auto sparse = dense.to_sparse();
  CHECK(at::equal(f(sparse).to_dense(), dense * 2));
  CHECK(at::equal(f(sparse).to_dense(), dense * 2));
  CHECK(logs.contains("jitc compiles strided tensors only"));
  CHECK(f.stats().eager_fallbacks == 2);
  CHECK(at::equal(f(dense), dense * 2));
  CHECK(f.stats().compiles == 1);
}

TEST_CASE("a sparse tensor made inside the callable makes it run eagerly", "[bad_input]") {
  LogCapture logs;
  auto f = jitc::compile([](const at::Tensor& x) { return x.to_sparse().to_dense() + 1; });
  const auto x = at::eye(2);
  CHECK(at::equal(f(x), x + 1));
  CHECK(at::equal(f(x), x + 1));
  CHECK(logs.contains("strided tensors only"));
}

TEST_CASE("conjugate views run eagerly", "[bad_input]") {
  auto f = jitc::compile([](const at::Tensor& x) { return x * 2; });
  const auto c = at::randn({3}, at::kComplexFloat);
  CHECK(at::equal(f(c.conj()), c.conj() * 2));
  CHECK(f.stats().eager_fallbacks == 1);
}

TEST_CASE("non-contiguous, expanded, empty and scalar-shaped inputs replay correctly", "[bad_input]") {
  auto f = jitc::compile([](const at::Tensor& x) { return (x * 3).sum(0); });
  for (const auto& x : {at::randn({4, 5}).t(), at::randn({5}).expand({4, 5}), at::randn({0, 5}), at::randn({1, 5}),
                        at::randn({4, 5}).slice(1, 0, 5, 2), at::randn({4, 5}).t()}) {
    f(x);  // traces or replays; the next call runs the compiled kernel
    CHECK(jitc::testing::difference(f(x), (x * 3).sum(0), {1e-5, 1e-5}) == "");
  }
}

TEST_CASE("an out-of-range op argument gives eager's error at trace and at replay", "[bad_input]") {
  auto f = jitc::compile([](const at::Tensor& x, int64_t dim) { return x.sum(dim); });
  CHECK_THROWS_AS(f(at::ones({2, 2}), 5), c10::Error);
  CHECK(at::equal(f(at::ones({2, 2}), 1), at::full({2}, 2.0f)));
}

TEST_CASE("mistakes in Options are reported when compiling", "[bad_input]") {
  auto body = [](const at::Tensor& x) { return x + 1; };
  CHECK_THROWS_WITH(jitc::compile(body, jitc::Options().mark_dynamic(1, 0)), Catch::Contains("takes 1 argument"));
  CHECK_THROWS_AS(jitc::compile(body, jitc::Options().mark_static(0, -1)), jitc::UnsupportedError);
  CHECK_THROWS_AS(jitc::compile(body, jitc::Options{.recompile_limit = -1}), jitc::UnsupportedError);
  CHECK_THROWS_AS(jitc::compile(body, jitc::Options{.arg_names = {"x", "y"}}), jitc::UnsupportedError);
  CHECK_NOTHROW(jitc::compile(body, jitc::Options().mark_dynamic(0, 0, 2, 64)));
}
