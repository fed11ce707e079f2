// Regressions for ways a replay could differ from eager (found in review). Each compares with eager.
#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/grad_mode.h>
#include <catch2/catch.hpp>
#include <torch/nn/modules/batchnorm.h>

#include <algorithm>
#include <array>

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
  CHECK(calibrate.stats().first_hit_checks == 1);  // the running statistics are captured tensors it updates
  CHECK(calibrate.stats().hits == 1);
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

// An exponential moving average of weights whose decay warms up with a step count kept in C++ (as
// diffusion and self-supervised training code writes it): the graph of its second call differs from its
// first (the decay), which no guard sees. Before session 47 the compiled replays froze the first decay and
// the average drifted from eager's without an error; now the entry's first hit traces again, finds another
// graph, and the function runs eagerly from then on.
TEST_CASE("an in-place update reading a C++ step count is traced again at its first hit and runs eagerly", "[soundness]") {
  const at::Tensor weights = at::randn({64}), average = at::zeros({64});
  int64_t steps = 0;
  auto update = [&](const at::Tensor& target, const at::Tensor& source) {
    at::NoGradGuard no_grad;
    const double decay = std::min(0.999, (1.0 + static_cast<double>(steps)) / (10.0 + static_cast<double>(steps)));
    ++steps;
    target.mul_(decay).add_(source, 1 - decay);
  };
  auto compiled = jitc::compile([&] { update(average, weights); });
  at::Tensor expected = at::zeros({64});
  int64_t eager_steps = 0;
  for (int call = 0; call < 5; ++call) {
    INFO("call " << call);
    std::swap(steps, eager_steps);
    update(expected, weights);
    std::swap(steps, eager_steps);
    compiled();
    CHECK(steps == eager_steps);
    CHECK(at::allclose(average, expected, 1e-6, 1e-7));
  }
  CHECK(compiled.stats().first_hit_checks == 1);
  CHECK(compiled.stats().eager_fallbacks == 3);
}

// A decode step writing its key into a cache at a position kept in C++ (a member the step increments):
// replays of the first trace wrote every key at position 0.
TEST_CASE("a cache written at a position kept in C++ is traced again at its first hit and runs eagerly", "[soundness]") {
  struct Cache {
    at::Tensor keys = at::zeros({1, 8, 4});
    int64_t position = 0;
    at::Tensor step(const at::Tensor& key) {
      keys.narrow(1, position, 1).copy_(key.unsqueeze(1));
      ++position;
      return (keys * (at::arange(8) < position).unsqueeze(0).unsqueeze(-1)).sum(1);
    }
  } cache, eager;
  auto compiled = jitc::compile([&](const at::Tensor& key) { return cache.step(key); });
  for (int call = 0; call < 5; ++call) {
    INFO("call " << call);
    const at::Tensor key = at::randn({1, 4});
    CHECK(at::equal(compiled(key), eager.step(key)));
    CHECK(at::equal(cache.keys, eager.keys));
  }
  CHECK(compiled.stats().first_hit_checks == 1);
}

// A double buffer whose half a C++ counter picks: the graphs are the same, the captured tensors are not.
TEST_CASE("an in-place update whose target a C++ counter picks is traced again at its first hit and runs eagerly", "[soundness]") {
  std::array<at::Tensor, 2> buffers{at::zeros({8}), at::zeros({8})}, expected{at::zeros({8}), at::zeros({8})};
  int64_t calls = 0, eager_calls = 0;
  auto compiled = jitc::compile([&](const at::Tensor& x) { buffers[calls++ % 2].add_(x); });
  for (int call = 0; call < 5; ++call) {
    const at::Tensor x = at::full({8}, static_cast<float>(call + 1));
    expected[eager_calls++ % 2].add_(x);
    compiled(x);
    CHECK(at::equal(buffers[0], expected[0]));
    CHECK(at::equal(buffers[1], expected[1]));
  }
  CHECK(compiled.stats().first_hit_checks == 1);
}

// The check costs one trace per entry that updates captured tensors, and an update that reads nothing
// from C++ keeps compiling: a running sum, its first hit traced again, then replays.
TEST_CASE("an in-place update of a captured tensor keeps its compiled entry after its first hit's trace", "[soundness]") {
  const at::Tensor total = at::zeros({16});
  auto compiled = jitc::compile([&](const at::Tensor& x) { total.add_(x * 2); });
  for (int call = 0; call < 4; ++call) compiled(at::ones({16}));
  CHECK(at::equal(total, at::full({16}, 8.0f)));
  CHECK(compiled.stats().first_hit_checks == 1);
  CHECK(compiled.stats().hits == 2);
  CHECK(compiled.stats().eager_fallbacks == 0);
}
