// Regressions for ways a replay could differ from eager (found in review). Each compares with eager.
#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/grad_mode.h>
#include <catch2/catch.hpp>
#include <torch/nn/modules/batchnorm.h>

TEST_CASE("traces with different scalar arguments are never merged into one symbolic entry", "[soundness]") {
  auto f = jitc::compile([](const at::Tensor& x, bool twice) { return x * (twice ? 2 : 3); });
  CHECK(at::equal(f(at::ones({2}), true), at::full({2}, 2.0f)));
  CHECK(at::equal(f(at::ones({3}), false), at::full({3}, 3.0f)));
  CHECK(at::equal(f(at::ones({2}), false), at::full({2}, 3.0f)));
  auto g = jitc::compile([](const at::Tensor& x, int64_t n) { return x.sum() + at::full({1}, n); });
  CHECK(at::equal(g(at::zeros({2}), 4), at::full({1}, 4.0f)));
  CHECK(at::equal(g(at::zeros({3}), 6), at::full({1}, 6.0f)));
  CHECK(at::equal(g(at::zeros({2}), 6), at::full({1}, 6.0f)));
}

TEST_CASE("traces with different aliasing are never merged into one symbolic entry", "[soundness]") {
  auto fn = [](const at::Tensor& x, const at::Tensor& y) {
    auto a = y * 2;
    x.add_(1);
    auto b = y * 2;
    return a + b;
  };
  auto f = jitc::compile(fn);
  f(at::zeros({4}), at::zeros({4}));
  auto base = at::zeros({6});
  f(base, base.view({6}));
  auto b2 = at::zeros({6});
  auto e2 = at::zeros({6});
  CHECK(at::equal(f(b2, b2.view({6})), fn(e2, e2.view({6}))));
}

TEST_CASE("a captured tensor passed back in as an argument is an aliasing miss", "[soundness]") {
  const at::Tensor w = at::ones({4});
  auto fn = [w](const at::Tensor& x) {
    auto a = w * 2;
    x.add_(1);
    auto b = w * 2;
    return a + b;
  };
  auto f = jitc::compile(fn);
  CHECK(at::equal(f(at::zeros({4})), at::full({4}, 4.0f)));
  const at::Tensor out = f(w);  // w becomes 2 before b reads it
  CHECK(at::equal(out, at::full({4}, 6.0f)));
}

TEST_CASE("batch_norm in training mode updates its running statistics on every replay", "[soundness]") {
  at::NoGradGuard no_grad;
  torch::nn::BatchNorm1d compiled_bn(3), eager_bn(3);
  compiled_bn->train();
  eager_bn->train();
  auto calibrate = jitc::compile([&compiled_bn](const at::Tensor& x) { compiled_bn->forward(x); });
  for (int i = 0; i < 3; ++i) {
    const auto x = at::randn({8, 3});
    calibrate(x);
    eager_bn->forward(x);
  }
  CHECK(calibrate.stats().hits == 2);
  CHECK(at::allclose(compiled_bn->running_mean, eager_bn->running_mean));
  CHECK(at::allclose(compiled_bn->running_var, eager_bn->running_var));
}

TEST_CASE("two results from identical ops never share memory, views included", "[soundness]") {
  auto f = jitc::compile([](const at::Tensor& x) {
    auto a = at::zeros({4}) + x.sum();
    auto b = at::zeros({4}) + x.sum();
    return std::make_tuple(a.view({2, 2}), b);
  });
  const auto x = at::zeros({3});
  f(x);
  auto [v, b] = f(x);
  b.fill_(7);
  CHECK(at::equal(v, at::zeros({2, 2})));
}

TEST_CASE("scalar arguments 0.0 and -0.0 are different guards", "[soundness]") {
  auto f = jitc::compile([](const at::Tensor& x, double s) { return 1.0 / (x * s); });
  CHECK(at::equal(f(at::ones({2}), 0.0), at::full({2}, INFINITY)));
  CHECK(at::equal(f(at::ones({2}), -0.0), at::full({2}, -INFINITY)));
}

TEST_CASE("jitc::reset() inside a traced callable neither deadlocks nor breaks the result", "[soundness]") {
  auto f = jitc::compile([](const at::Tensor& x) {
    jitc::reset();
    return x + 1;
  });
  CHECK(at::equal(f(at::zeros({2})), at::ones({2})));
  CHECK(at::equal(f(at::zeros({2})), at::ones({2})));
}

TEST_CASE("random draws before a graph break happen once per call, as in eager", "[soundness]") {
  auto fn = [](const at::Tensor& x) {
    auto noisy = x + at::randn_like(x);
    if (x.sum().item<double>() > 0) return noisy * 2;
    return noisy - 1;
  };
  auto f = jitc::compile(fn);
  const auto pos = at::ones({4});
  const auto neg = -at::ones({4});
  for (const auto& x : {pos, neg, pos, neg, neg, pos}) {
    at::manual_seed(7);
    const auto expected = fn(x);
    const auto after_eager = at::randn({1});
    at::manual_seed(7);
    const auto got = f(x);
    const auto after_compiled = at::randn({1});
    CHECK(at::equal(got, expected));
    CHECK(at::equal(after_compiled, after_eager));
  }
}

TEST_CASE("a callable branching on requires_grad sees what eager sees", "[soundness]") {
  at::NoGradGuard no_grad;
  auto fn = [](const at::Tensor& x) { return x.requires_grad() ? x * 2 : x - 1; };
  auto f = jitc::compile(fn);
  const auto x = at::ones({3}).requires_grad_(true);
  CHECK(at::equal(f(x), fn(x)));
  CHECK(at::equal(f(x), fn(x)));
  const auto y = at::ones({3});
  CHECK(at::equal(f(y), fn(y)));
  CHECK(f.stats().compiles == 2);
}

TEST_CASE("a different autocast dtype is a recompile and gives eager's dtype", "[soundness]") {
  const auto w = at::randn({8, 8});
  auto fn = [&w](const at::Tensor& x) { return at::mm(x, w); };
  auto f = jitc::compile(fn);
  const auto x = at::randn({4, 8});
  at::autocast::set_autocast_enabled(at::kCPU, true);
  for (auto dtype : {at::kBFloat16, at::kHalf, at::kBFloat16}) {
    at::autocast::set_autocast_dtype(at::kCPU, dtype);
    const auto expected = fn(x);
    const auto got = f(x);
    CHECK(got.scalar_type() == expected.scalar_type());
    CHECK(at::equal(got, expected));
  }
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  at::autocast::set_autocast_enabled(at::kCPU, false);
  at::autocast::clear_cache();
  CHECK(f.stats().compiles == 2);
  CHECK(f.stats().hits == 1);
  CHECK_THAT(f.stats().recompile_reasons.at(0), Catch::Contains("GLOBAL_STATE changed: autocast"));
}
