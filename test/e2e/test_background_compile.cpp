// Programs built in the background (the default, Options::compile_in_background; the rest of the suite
// runs with JITC_COMPILE_IN_BACKGROUND=0): a graph's first hit starts its build on a thread of its own
// and runs through eager replay, as every call does until the program is ready; then calls switch to it.
// Every call's result is eager's, inference and training, from several threads; a function destroyed or
// reset while its build runs waits for it.
#include "support/background_builds.h"
#include "support/parity.h"
#include "support/scoped_env.h"

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
  const auto x = at::randn({64, 32}), w = at::randn({32, 32}) * 0.2;
  auto compiled = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return layers(x, w); });
  CHECK(jitc::testing::difference(compiled(x, w), layers(x, w), {0, 0}) == "");  // traced, run eagerly
  // The first hit starts the build and returns eager replay's result (eager's ops, the same bits).
  CHECK(jitc::testing::difference(compiled(x, w), layers(x, w), {0, 0}) == "");
  CHECK(compiled.stats().programs_compiled == 0);
  // Until the program is ready (a call may find it ready between the check and the call: the tolerance).
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
  const auto x = at::randn({64, 32}), w = at::randn({32, 32}) * 0.2;
  for (int round = 0; round < 3; ++round) {
    auto compiled = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return layers(x, w); });
    compiled(x, w);
    compiled(x, w);  // starts the build; the function goes out of scope while it runs
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
  const auto x = at::randn({64, 32}), w = at::randn({32, 32}) * 0.2;
  auto compiled = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return layers(x, w); });
  compiled.wait_for_compiles();  // nothing building: returns at once
  compiled(x, w);
  compiled(x, w);  // the first hit starts the build
  compiled.wait_for_compiles();
  CHECK(compiled.stats().programs_compiled == 1);
  CHECK(jitc::testing::difference(compiled(x, w), layers(x, w), jitc::testing::reduction_tolerance(at::kFloat, 32)) == "");
}
