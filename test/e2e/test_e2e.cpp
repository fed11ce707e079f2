// End to end: compile, replay, fallbacks, explain, environment switches.
#include "support/parity.h"
#include "support/log_capture.h"
#include "runtime/env.h"
#include "runtime/error_text.h"
#include "runtime/slow_compile.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <ATen/TensorIndexing.h>
#include <ATen/core/grad_mode.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>

using jitc::testing::LogCapture;

namespace {

at::Tensor mlp(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) { return at::gelu(at::linear(x, w, b)) * 0.5 + x; }

}  // namespace

TEST_CASE("first call is bit-identical to eager and replays equal eager on new data", "[e2e]") {
  const auto w = at::randn({32, 32});
  const auto b = at::randn({32});
  auto f = jitc::compile(mlp);
  const auto x0 = at::randn({4, 32});
  CHECK(at::equal(f(x0, w, b), mlp(x0, w, b)));
  for (int i = 0; i < 3; ++i) {  // replays run the fused kernel: equal to float32 rounding (libm's erf)
    const auto x = at::randn({4, 32});
    CHECK(jitc::testing::difference(f(x, w, b), mlp(x, w, b), {1e-5, 1e-5}) == "");
  }
  const auto s = f.stats();
  CHECK(s.compiles == 1);
  CHECK(s.hits == 3);
  CHECK(s.calls == 4);
}

TEST_CASE("first call is bit-identical to eager for linear on a sliced view (an lm_head on the last position)", "[e2e]") {
  for (int64_t batch : {1, 2, 8}) {
    const auto w = at::randn({50, 64}), b = at::randn({50});
    auto head = [&w, &b](const at::Tensor& h) { return at::linear(h.slice(1, -1), w, b); };
    auto head_no_bias = [&w](const at::Tensor& h) { return at::linear(h.select(1, -1), w); };
    const auto h = at::randn({batch, 7, 64});
    INFO("batch " << batch);
    CHECK(at::equal(jitc::compile(head)(h), head(h)));
    CHECK(at::equal(jitc::compile(head_no_bias)(h), head_no_bias(h)));
    c10::InferenceMode inference;
    CHECK(at::equal(jitc::compile(head)(h), head(h)));
  }
}

TEST_CASE("JITC_DISABLE=1 runs every call eagerly", "[e2e]") {
  setenv("JITC_DISABLE", "1", 1);
  jitc::runtime::reload_env();
  auto f = jitc::compile([](const at::Tensor& x) { return x.sin(); });
  const auto x = at::randn({3});
  CHECK(at::equal(f(x), x.sin()));
  CHECK(f.stats().compiles == 0);
  CHECK(f.stats().eager_fallbacks == 1);
  unsetenv("JITC_DISABLE");
  jitc::runtime::reload_env();
  CHECK(at::equal(f(x), x.sin()));
  CHECK(f.stats().compiles == 1);
}

TEST_CASE("a callable that reads data_ptr runs eagerly once warned, with the fix in the warning and inputs written exactly once", "[e2e]") {
  LogCapture logs;
  auto f = jitc::compile([](const at::Tensor& x) {
    x.add_(1);  // written before the untraceable read: the trace's write must be undone
    const float first = x.data_ptr<float>()[0];
    return x * first;
  });
  auto x = at::ones({3});
  auto expected_input = at::ones({3}) + 1;
  const auto y = f(x);
  CHECK(at::equal(x, expected_input));
  CHECK(at::equal(y, expected_input * 2));
  CHECK(logs.contains("cannot be traced and runs eagerly from now on"));
  CHECK(logs.contains("make such tensors outside the compiled function and pass them as arguments"));
  f(x);
  CHECK(f.stats().compiles == 0);
  CHECK(f.stats().eager_fallbacks == 2);
  CHECK(at::equal(x, at::ones({3}) + 2));
}

TEST_CASE("an exception thrown by the callable itself reaches the caller unchanged", "[e2e]") {
  auto f = jitc::compile([](const at::Tensor& x, int64_t n) {
    if (n < 0) throw std::invalid_argument("n must be >= 0");
    return x * n;
  });
  const auto x = at::ones({2});
  CHECK_THROWS_AS(f(x, -1), std::invalid_argument);
  CHECK(at::equal(f(x, 3), x * 3));
  CHECK(f.stats().compiles == 1);  // the failure did not mark the function eager-only
}

TEST_CASE("grad mode with an argument requiring grad compiles forward and backward", "[e2e]") {
  auto f = jitc::compile([](const at::Tensor& x) { return (x * x).sum(); });
  for (int i = 0; i < 3; ++i) {
    const auto x = at::randn({3}).requires_grad_(true);
    auto y = f(x);
    y.backward();
    CHECK(at::allclose(x.grad(), 2 * x.detach()));
  }
  CHECK(f.stats().compiles == 1);
  CHECK(f.stats().hits == 2);
  {
    at::NoGradGuard no_grad;  // an inference entry of its own
    const auto x = at::randn({3}).requires_grad_(true);
    CHECK(at::allclose(f(x), (x * x).sum()));
    CHECK(!f(x).requires_grad());
  }
  CHECK(f.stats().compiles == 2);
}

TEST_CASE("a captured tensor requiring grad with grad mode on compiles for training, and under no_grad for inference", "[e2e]") {
  const auto w = at::randn({3}).requires_grad_(true);
  auto f = jitc::compile([&w](const at::Tensor& x) { return x * w; });
  const auto x = at::randn({3});
  for (int i = 0; i < 2; ++i) {
    auto y = f(x);
    CHECK(y.requires_grad());
    y.sum().backward();
  }
  CHECK(at::allclose(w.grad(), 2 * x));
  CHECK(f.stats().hits == 1);
  at::NoGradGuard no_grad;
  CHECK(at::equal(f(x), x * w));
  CHECK(at::equal(f(x), x * w));
  CHECK(f.stats().hits == 2);
  CHECK(f.stats().compiles == 2);
}

TEST_CASE("a compiled function called while another is traced is inlined", "[e2e]") {
  auto inner = jitc::compile([](const at::Tensor& x) { return x.cos(); });
  auto outer = jitc::compile([&inner](const at::Tensor& x) { return inner(x) + 1; });
  const auto x = at::randn({4});
  CHECK(at::equal(outer(x), x.cos() + 1));
  const auto report = jitc::explain(outer, x);
  REQUIRE(report.ops_per_graph.size() == 1);
  const auto& ops = report.ops_per_graph[0];
  CHECK(std::find(ops.begin(), ops.end(), "aten::cos") != ops.end());
  CHECK(inner.stats().compiles == 0);
}

TEST_CASE("explain reports graphs, breaks, ops and guards", "[e2e]") {
  auto f = jitc::compile([](const at::Tensor& x) {
    auto y = x.relu();
    if (y.sum().item<double>() > 0) return y * 2;
    return y - 1;
  });
  const auto report = jitc::explain(f, at::ones({4}));
  CHECK(report.graph_count == 2);
  CHECK(report.graph_break_count == 1);
  REQUIRE(report.break_reasons.size() == 1);
  CHECK(report.break_reasons[0].reason == "Data dependent operator");
  CHECK(report.op_count >= 3);
  CHECK_THAT(report.to_string(), Catch::Contains("Graph Count: 2") && Catch::Contains("TENSOR_MATCH"));
}

// A tensor the callable stores beyond the call (a member, a global, an optimizer's state): a replay could
// not update it, so the traced call counts as the call's execution and the stored tensor is usable as what
// that execution computed. The next call traces again (an optimizer's state, made by a first step, exists
// then); a second such trace makes the function run eagerly from then on, keeping the tensor current as
// eager does. (Until session 41 a later use raised; torch::optim's steps hit that on their second call.)
TEST_CASE("a tensor stored outside the callable while tracing stays usable, and the function runs eagerly from then on", "[e2e]") {
  static at::Tensor leaked;
  auto f = jitc::compile([](const at::Tensor& x) {
    auto y = x + 1;
    leaked = y * 2;
    return y;
  });
  CHECK(at::equal(f(at::zeros({2})), at::ones({2})));
  CHECK(at::equal(leaked + 1, at::full({2}, 3.f)));
  CHECK(at::equal(f(at::ones({2})), at::full({2}, 2.f)));
  CHECK(at::equal(leaked, at::full({2}, 4.f)));  // the second call's, as in eager
  CHECK(at::equal(f(at::full({2}, 2.f)), at::full({2}, 3.f)));
  CHECK(at::equal(leaked, at::full({2}, 6.f)));
  CHECK(f.stats().compiles == 0);
  CHECK(f.stats().eager_fallbacks == 3);  // two traces kept as their calls' execution, then an eager call
  leaked = at::Tensor();
}

TEST_CASE("a tensor made from a buffer inside the callable becomes a constant of the graph", "[e2e]") {
  auto f = jitc::compile([](const at::Tensor& x) {
    static float table[3] = {1, 2, 3};
    return x * at::from_blob(table, {3});
  });
  const auto x = at::randn({3});
  const auto expected = x * at::tensor({1.0f, 2.0f, 3.0f});
  CHECK(at::equal(f(x), expected));
  CHECK(at::equal(f(x), expected));
  CHECK(f.stats().hits == 1);
}

TEST_CASE("void callables replay their writes into arguments", "[e2e]") {
  auto f = jitc::compile([](const at::Tensor& x) { x.mul_(2).add_(1); });
  auto x = at::ones({3});
  f(x);
  f(x);
  CHECK(at::equal(x, at::full({3}, 7.0f)));
  CHECK(f.stats().hits == 1);
}

TEST_CASE("compile_times logs the stages of each program's compile once, and Stats sums them", "[e2e][logging]") {
  LogCapture logs("compile_times");
  // A constant of this run's: no compile cache (memory or disk) holds the graph, so it is compiled.
  const double c = 1 + static_cast<double>(std::chrono::steady_clock::now().time_since_epoch().count() % 100000) / 1e6;
  auto f = jitc::compile([c](const at::Tensor& x) { return (x * c).relu().sum(-1); });
  for (int i = 0; i < 3; ++i) f(at::randn({4, 8}));  // the second call builds the program
  const auto lines = logs.lines_with("[__compile_times] compile times ");
  REQUIRE(lines.size() == 1);
  for (const char* stage : {": trace ", " ms, passes ", " ms, lower+schedule ", " ms, codegen ", " ms, llvm ", " ms (total "})
    CHECK_THAT(lines[0], Catch::Contains(stage));
  CHECK_THAT(lines[0], !Catch::Contains("nvrtc"));
  CHECK_THAT(lines[0], !Catch::Contains("cache"));
  const auto s = f.stats();
  CHECK(s.codegen_stages.lower_schedule > 0);
  CHECK(s.codegen_stages.llvm > 0);
  CHECK(s.codegen_stages.nvrtc == 0);
  CHECK(s.codegen_stages.load > 0);  // the object code linked into the process (the backend's load step)
  const auto& st = s.codegen_stages;
  CHECK(st.passes + st.lower_schedule + st.codegen + st.llvm + st.load <= s.codegen_seconds);
}

TEST_CASE("perf_hints names the ops that run as extern ATen calls in one line per compiled graph", "[e2e][logging]") {
  LogCapture logs("perf_hints");
  const auto w = at::randn({2, 3});
  auto f = jitc::compile([&w](const at::Tensor& x) { return at::mm(x, w).relu() + 1; });
  for (int i = 0; i < 3; ++i) f(at::ones({2, 2}));
  const auto lines = logs.lines_with("[__perf_hints]");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find(": extern: mm x1") != std::string::npos);
  CHECK(f.stats().kernels_compiled == 1);
  auto g = jitc::compile([&w](const at::Tensor& x) { return at::mm(x, w); }, jitc::Options{.backend = jitc::Backend::kEager});
  const auto before = logs.text().size();
  g(at::ones({2, 2}));
  g(at::ones({2, 2}));
  CHECK(logs.text().size() == before);
  CHECK(g.stats().programs_compiled == 0);
}

TEST_CASE("perf_hints counts repeated extern ops in one summary line, not one line per op", "[e2e][logging]") {
  LogCapture logs("perf_hints");
  const auto w = at::randn({4, 4}), v = at::randn({4, 4});
  auto f = jitc::compile([&](const at::Tensor& x) {
    const auto h = at::mm(x, w).relu();
    return at::addmm(x, at::mm(h, v).sigmoid(), w) + at::mm(h, w);
  });
  const auto x = at::randn({4, 4});
  f(x);
  f(x);
  const auto lines = logs.lines_with("[__perf_hints]");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find(": extern: mm x3, addmm x1") != std::string::npos);
  CHECK(lines[0].find("runs as an extern ATen call") == std::string::npos);
}

TEST_CASE("a training trace jitc cannot compile gives one warning, then grad-mode calls run eagerly and inference calls compile",
          "[e2e][logging]") {
  LogCapture logs;
  const auto w = at::randn({3}).requires_grad_(true);
  auto f = jitc::compile([&w](const at::Tensor& x) {
    auto y = x * w;
    if (y.requires_grad()) y.register_hook([](const at::Tensor& g) { return g * 2; });
    return y;
  });
  const auto x = at::randn({3});
  for (int i = 0; i < 3; ++i) f(x).sum().backward();
  CHECK(at::allclose(w.grad(), 6 * x));  // the hook ran on every call: eager
  const auto lines = logs.lines_with("eagerly");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("its training trace failed (a hook (register_hook, retain_grad) on a tensor computed inside the callable") !=
        std::string::npos);
  CHECK(f.stats().eager_fallbacks == 3);
  at::NoGradGuard no_grad;
  for (int i = 0; i < 2; ++i) CHECK(at::equal(f(x), x * w));
  CHECK(f.stats().hits == 1);
}

TEST_CASE("a graph break in a training graph is checked on replay: no warning, each value compiled", "[e2e][logging]") {
  LogCapture logs;
  auto f = jitc::compile([](const at::Tensor& x) { return (x.sum() > 0).item<bool>() ? x * 2 : x * 3; });
  const auto x = at::randn({3}).requires_grad_(true);
  for (int i = 0; i < 3; ++i) f(x).sum().backward();
  CHECK(at::allclose(x.grad(), at::full({3}, x.sum().item<double>() > 0 ? 6.0 : 9.0)));
  CHECK(logs.lines_with("eagerly").empty());
  CHECK(f.stats().hits == 2);
  CHECK(f.stats().graph_breaks == 1);
}

TEST_CASE("indexing by integer index tensors compiles without a graph break, and an index out of range raises eager's error", "[e2e]") {
  using at::indexing::Slice;
  auto fn = [](const at::Tensor& x, const at::Tensor& rows, const at::Tensor& columns) {
    return (x.index({rows}) * 2).relu().sum(1) + x.index({Slice(), columns}).sum(1).index({rows});
  };
  auto f = jitc::compile(fn);
  const auto x = at::randn({6, 4});
  for (int64_t n : {3, 3, 5, 3}) {
    const auto rows = at::randint(6, {n}), columns = at::randint(4, {2}, at::kInt);
    CHECK(at::allclose(f(x, rows, columns), fn(x, rows, columns)));
  }
  CHECK(f.stats().graph_breaks == 0);
  CHECK(f.stats().hits >= 2);
  const auto out_of_range = at::tensor({1, 9, 2});
  std::string eager_error;
  try {
    fn(x, out_of_range, at::zeros({2}, at::kInt));
  } catch (const c10::IndexError& e) {
    eager_error = e.what_without_backtrace();
  }
  REQUIRE(!eager_error.empty());
  CHECK_THROWS_AS(f(x, out_of_range, at::zeros({2}, at::kInt)), c10::IndexError);
  CHECK_THROWS_WITH(f(x, out_of_range, at::zeros({2}, at::kInt)), Catch::Contains(eager_error));
  // A boolean mask's result has as many rows as the mask has true values: that one still breaks.
  auto masked = jitc::compile([](const at::Tensor& x) { return x.index({x > 0}).sum() * 2; });
  for (int i = 0; i < 3; ++i) CHECK(at::allclose(masked(x), x.index({x > 0}).sum() * 2));
  CHECK(masked.stats().graph_breaks == 1);
}

TEST_CASE("the cannot-be-traced warning holds the error's message without a C++ backtrace", "[e2e][logging]") {
  LogCapture logs;
  auto f = jitc::compile([](const at::Tensor& x) { return x * x.data_ptr<float>()[0]; });
  const auto x = at::ones({3});
  CHECK(at::equal(f(x), x));
  const auto text = logs.text();
  CHECK(logs.contains("cannot be traced and runs eagerly from now on"));
  CHECK(text.find("frame #") == std::string::npos);
  CHECK(text.find("Exception raised from") == std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
}

TEST_CASE("dropouts in eval mode are identities lowered into the kernel, not extern calls", "[e2e]") {
  at::NoGradGuard no_grad;
  const auto x = at::randn({2, 4, 3, 3});
  jitc::testing::check_lowered_parity(
      "dropout", [](const at::Tensor& t) { return at::dropout(t * 2, 0.5, false) + 1; }, x);
  jitc::testing::check_lowered_parity(
      "feature_dropout", [](const at::Tensor& t) { return at::feature_dropout(t * 2, 0.5, false) + 1; }, x);
  jitc::testing::check_lowered_parity(
      "alpha_dropout", [](const at::Tensor& t) { return at::alpha_dropout(t * 2, 0.5, false) + 1; }, x);
  jitc::testing::check_lowered_parity(
      "feature_alpha_dropout", [](const at::Tensor& t) { return at::feature_alpha_dropout(t * 2, 0.5, false) + 1; }, x);
}

TEST_CASE("a train-mode batch_norm under no_grad runs correctly and its message names the running statistics", "[e2e]") {
  LogCapture logs;
  at::NoGradGuard no_grad;
  auto fn = [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& mean, const at::Tensor& var) {
    return at::batch_norm(x, w, b, mean, var, /*training=*/true, 0.1, 1e-5, false).relu();
  };
  const auto w = at::randn({3}), b = at::randn({3});
  auto mean = at::zeros({3}), var = at::ones({3});
  auto eager_mean = at::zeros({3}), eager_var = at::ones({3});
  auto f = jitc::compile(fn);
  for (int call = 0; call < 3; ++call) {
    const auto x = at::randn({4, 3, 5, 5});
    INFO("call " << call);
    CHECK(jitc::testing::difference(f(x, w, b, mean, var), fn(x, w, b, eager_mean, eager_var), {1e-5, 1e-5}) == "");
    CHECK(jitc::testing::difference(mean, eager_mean, {1e-6, 1e-6}) == "");
    CHECK(jitc::testing::difference(var, eager_var, {1e-6, 1e-6}) == "");
  }
  CHECK_FALSE(logs.contains("out= argument"));
  const auto lines = logs.lines_with("batch_norm");
  CHECK(lines.size() <= 1);
  for (const auto& line : lines) CHECK(line.find("running statistics") != std::string::npos);
}

TEST_CASE("a long code generation is announced at its start and its end, with its op count", "[e2e][logging]") {
  LogCapture logs;
  jitc::runtime::set_slow_compile_threshold(std::chrono::milliseconds(0));  // every compile counts as long
  auto f = jitc::compile([](const at::Tensor& x) { return (x.sin() * 2 + 1).relu(); }, jitc::Options{.name = "slow"});
  const auto x = at::randn({8});
  f(x);
  f(x);
  jitc::runtime::set_slow_compile_threshold(std::chrono::milliseconds(1000));
  const auto start = logs.lines_with("is taking more than");
  const auto end = logs.lines_with("jitc: generated code for");
  REQUIRE(start.size() == 1);
  REQUIRE(end.size() == 1);
  CHECK(start[0].rfind("I", 0) == 0);  // INFO: printed without JITC_LOGS
  CHECK(start[0].find("slow_0 (4 ops)") != std::string::npos);
  CHECK(end[0].find("slow_0 (4 ops) in ") != std::string::npos);
  CHECK(logs.text().find(start[0]) < logs.text().find(end[0]));
}

TEST_CASE("a code generation under the threshold prints no compile notice", "[e2e][logging]") {
  LogCapture logs;
  auto f = jitc::compile([](const at::Tensor& x) { return x.cos() + 1; });
  const auto x = at::randn({8});
  f(x);
  f(x);
  CHECK(logs.text().empty());
}

TEST_CASE("error_text keeps a c10::Error's message and drops its C++ backtrace", "[e2e][logging]") {
  try {
    TORCH_CHECK(false, "the size must be positive");
  } catch (const c10::Error& e) {
    const std::string text = jitc::runtime::error_text(e);
    CHECK(text.find("the size must be positive") != std::string::npos);
    CHECK(text.find("frame #") == std::string::npos);
    CHECK(text.find("Exception raised from") == std::string::npos);
  }
  CHECK(jitc::runtime::error_text(std::runtime_error("plain")) == "plain");
}
