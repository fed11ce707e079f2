// Programs built in the background (the default, Options::compile_in_background; the rest of the suite
// runs with JITC_COMPILE_IN_BACKGROUND=0): a graph's build starts on a thread of its own when it is traced,
// and its hits run through eager replay until the program is ready; then calls switch to it.
// Every call's result is eager's, inference and training, from several threads; a function destroyed or
// reset while its build runs waits for it.
#include "runtime/pipeline.h"
#include "support/background_builds.h"
#include "support/parity.h"
#include "support/scoped_env.h"
#include "support/trace_of.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <vector>

namespace {

using jitc::testing::calls_until_built;
using jitc::testing::layers;

}  // namespace

TEST_CASE("a program builds in the background while calls run through eager replay, then calls switch to it", "[background]") {
  jitc::testing::ScopedEnv background("JITC_COMPILE_IN_BACKGROUND", "1");
  jitc::testing::ScopedEnv at_trace("JITC_BUILD_AT_TRACE", "1");  // the defaults
  const auto x = at::randn({64, 32}), w = at::randn({32, 32}) * 0.2;
  auto compiled = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return layers(x, w); });
  CHECK(jitc::testing::difference(compiled(x, w), layers(x, w), {0, 0}) == "");  // traced (the build starts), run eagerly
  // Until the program is ready, eager replay's result (eager's ops, the same bits); a call may find it
  // ready between the check and the call: the tolerance.
  const int replayed = calls_until_built(
      compiled, [&] { CHECK(jitc::testing::difference(compiled(x, w), layers(x, w), jitc::testing::reduction_tolerance(at::kFloat, 32)) == ""); });
  CHECK(replayed > 0);
  REQUIRE(compiled.stats().programs_compiled == 1);
  CHECK(jitc::testing::difference(compiled(x, w), layers(x, w), jitc::testing::reduction_tolerance(at::kFloat, 32)) == "");
  CHECK(compiled.stats().eager_fallbacks == 0);
  CHECK(compiled.stats().kernels_compiled > 0);
}

TEST_CASE("calls from several threads while a program builds in the background all get eager's result", "[background]") {
  jitc::testing::ScopedEnv background("JITC_COMPILE_IN_BACKGROUND", "1");
  jitc::testing::ScopedEnv at_trace("JITC_BUILD_AT_TRACE", "1");  // the defaults
  const auto w = at::randn({32, 32}) * 0.2;
  auto compiled = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return layers(x, w); });
  compiled(at::randn({64, 32}), w);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const auto x = at::randn({64, 32}) + t;
      for (int call = 0; call < 40; ++call)
        if (jitc::testing::difference(compiled(x, w), layers(x, w), jitc::testing::reduction_tolerance(at::kFloat, 32)) != "") ++mismatches;
    });
  for (auto& thread : threads) thread.join();
  CHECK(mismatches == 0);
  CHECK(compiled.stats().programs_compiled <= 1);
}

TEST_CASE("a compiled function destroyed or reset while its program builds waits for the build", "[background]") {
  jitc::testing::ScopedEnv background("JITC_COMPILE_IN_BACKGROUND", "1");
  jitc::testing::ScopedEnv at_trace("JITC_BUILD_AT_TRACE", "1");  // the defaults
  const auto x = at::randn({64, 32}), w = at::randn({32, 32}) * 0.2;
  for (int round = 0; round < 3; ++round) {
    auto compiled = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return layers(x, w); });
    compiled(x, w);  // starts the build
    compiled(x, w);  // the function goes out of scope while the build runs
  }
  auto compiled = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return layers(x, w); });
  compiled(x, w);
  compiled(x, w);
  jitc::reset();  // every compiled function (torch._dynamo.reset)
  CHECK(compiled.stats().programs_compiled == 0);
  CHECK(jitc::testing::difference(compiled(x, w), layers(x, w), {0, 0}) == "");  // traced again
}

TEST_CASE("training steps run through eager replay while the forward and backward programs build", "[background]") {
  jitc::testing::ScopedEnv background("JITC_COMPILE_IN_BACKGROUND", "1");
  jitc::testing::ScopedEnv at_trace("JITC_BUILD_AT_TRACE", "1");  // the defaults
  jitc::testing::check_training_steps_while_building(at::kCPU);
}

TEST_CASE("background builds are on by default in the default mode, the option turns them off, the environment overrides it", "[background]") {
  jitc::testing::ScopedEnv unset("JITC_COMPILE_IN_BACKGROUND", "");  // empty: the option decides
  const auto x = at::randn({64, 32}), w = at::randn({32, 32}) * 0.2;
  auto first_hit_built = [&](jitc::Options options) {
    auto compiled = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return layers(x, w); }, options);
    compiled(x, w);
    CHECK(jitc::testing::difference(compiled(x, w), layers(x, w), jitc::testing::reduction_tolerance(at::kFloat, 32)) == "");
    const bool built = compiled.stats().programs_compiled == 1;
    compiled.wait_for_compiles();
    CHECK(compiled.stats().programs_compiled == 1);
    return built;
  };
  CHECK_FALSE(first_hit_built(jitc::Options{}));  // on by default
  for (const jitc::Mode mode : {jitc::Mode::kDefault, jitc::Mode::kReduceOverhead, jitc::Mode::kMaxAutotune, jitc::Mode::kMaxAutotuneNoCudagraphs}) {
    INFO("mode " << jitc::to_string(mode));
    jitc::Options options;
    options.mode = mode;
    // max-autotune builds on the first hit (it times kernels)
    CHECK(first_hit_built(options) == (mode != jitc::Mode::kDefault && mode != jitc::Mode::kReduceOverhead));
  }
  jitc::Options off;
  off.compile_in_background = false;
  CHECK(first_hit_built(off));
  {
    jitc::testing::ScopedEnv env_off("JITC_COMPILE_IN_BACKGROUND", "0");
    CHECK(first_hit_built(jitc::Options{}));
  }
  jitc::testing::ScopedEnv forced("JITC_COMPILE_IN_BACKGROUND", "1");
  CHECK_FALSE(first_hit_built(off));
}

TEST_CASE("wait_for_compiles returns when the programs building in the background are ready", "[background]") {
  jitc::testing::ScopedEnv background("JITC_COMPILE_IN_BACKGROUND", "1");
  jitc::testing::ScopedEnv at_trace("JITC_BUILD_AT_TRACE", "1");  // the defaults
  const auto x = at::randn({64, 32}), w = at::randn({32, 32}) * 0.2;
  auto compiled = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return layers(x, w); });
  compiled.wait_for_compiles();  // nothing building: returns at once
  compiled(x, w);  // the trace starts the build
  compiled(x, w);
  compiled.wait_for_compiles();
  CHECK(compiled.stats().programs_compiled == 1);
  CHECK(jitc::testing::difference(compiled(x, w), layers(x, w), jitc::testing::reduction_tolerance(at::kFloat, 32)) == "");
}

// The build starts when the graph is traced (as torch.compile compiles a frame at its first call), not at
// its first hit: whatever the caller does next overlaps it (a training step's eager backward and
// optimizer, the traces of other compiled functions). max-autotune times kernels while it builds, which a
// busy caller would mislead: it builds at the first hit. A training entry builds its forward and backward.
TEST_CASE("a program's build starts when its graph is traced, before its first hit", "[background]") {
  const auto x = at::randn({64, 32}), w = at::randn({32, 32}) * 0.2;
  auto check_mode = [&](jitc::Mode mode, bool at_trace_on) {
    jitc::Options options;
    options.mode = mode;
    auto compiled = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return layers(x, w); }, options);
    compiled(x, w);
    compiled.wait_for_compiles();
    const bool built = at_trace_on && (mode == jitc::Mode::kDefault || mode == jitc::Mode::kReduceOverhead);
    CHECK(compiled.stats().programs_compiled == (built ? 1 : 0));
    compiled(x, w);
    compiled.wait_for_compiles();
    CHECK(compiled.stats().programs_compiled == 1);
    CHECK(jitc::testing::difference(compiled(x, w), layers(x, w), jitc::testing::reduction_tolerance(at::kFloat, 32)) == "");
    CHECK(compiled.stats().hits == 2);
  };
  for (const char* at_trace_on : {"1", "0"}) {  // 0: at the first hit (the suite's default)
    jitc::testing::ScopedEnv at_trace("JITC_BUILD_AT_TRACE", at_trace_on);
    for (const char* background : {"0", "1"}) {
      jitc::testing::ScopedEnv env("JITC_COMPILE_IN_BACKGROUND", background);
      for (const jitc::Mode mode : {jitc::Mode::kDefault, jitc::Mode::kReduceOverhead, jitc::Mode::kMaxAutotune, jitc::Mode::kMaxAutotuneNoCudagraphs}) {
        INFO("JITC_BUILD_AT_TRACE " << at_trace_on << ", background " << background << ", mode " << jitc::to_string(mode));
        check_mode(mode, at_trace_on[0] == '1');
      }
    }
  }
  jitc::testing::ScopedEnv at_trace("JITC_BUILD_AT_TRACE", "1");
  const auto w1 = (at::randn({32, 16}) * 0.2).requires_grad_();
  auto loss_of = [&](const at::Tensor& x) { return at::tanh(at::mm(x, w1)).pow(2).mean(); };
  auto compiled = jitc::compile(loss_of);
  compiled(x).backward();  // traced with its backward, run eagerly
  compiled.wait_for_compiles();
  CHECK(compiled.stats().programs_compiled == 2);  // the forward's and the backward's
  const at::Tensor eager_grad = w1.grad().clone();
  w1.mutable_grad().zero_();
  compiled(x).backward();
  CHECK(jitc::testing::difference(w1.grad(), eager_grad, jitc::testing::reduction_tolerance(at::kFloat, 64)) == "");
  CHECK(compiled.stats().hits == 1);
  CHECK(compiled.stats().eager_fallbacks == 0);
}

// A static entry that a symbolic one replaces while its build (started at its trace) runs: the pipeline
// stops before scheduling its kernels, and nothing is reported (build_program returns no program).
TEST_CASE("a superseded entry's build stops before its kernels are scheduled", "[background]") {
  auto fn = [](const at::Tensor& x) { return (x * 2).sin().sum(0); };
  auto entry = std::make_shared<jitc::runtime::Entry>();
  entry->graph = jitc::testing::trace_of(fn, at::randn({8, 16})).graph;
  const jitc::runtime::PipelineRequest request{.entry = entry.get(), .name = "superseded_0", .compile_id = "0/0"};
  jitc::runtime::CompileTimes times;
  CHECK(jitc::runtime::run_pipeline(request, times).code != nullptr);
  jitc::runtime::supersede(*entry);
  CHECK_THROWS_AS(jitc::runtime::run_pipeline(request, times), jitc::runtime::BuildSuperseded);
}
