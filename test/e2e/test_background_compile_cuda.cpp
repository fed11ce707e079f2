// Programs built in the background on a GPU ([cuda]: skipped without one): CUDA graphs in modes default
// and reduce-overhead build on a thread of their own (NVRTC, then the module loaded there) while calls
// run through eager replay on the caller's stream; every call's result is eager's, and once built the
// program runs (captured into a CUDA graph under reduce-overhead). Training steps too.
#include "support/background_builds.h"
#include "support/parity.h"
#include "support/scoped_env.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <vector>

namespace {

using jitc::testing::calls_until_built;
using jitc::testing::difference;
using jitc::testing::layers;
using jitc::testing::reduction_tolerance;

bool have_gpu() { return at::hasCUDA() && c10::cuda::device_count() > 0; }

}  // namespace

TEST_CASE("CUDA programs build in the background in modes default and reduce-overhead, on the caller's stream", "[cuda][background]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  jitc::testing::ScopedEnv background("JITC_COMPILE_IN_BACKGROUND", "1");
  jitc::testing::ScopedEnv at_trace("JITC_BUILD_AT_TRACE", "1");  // the defaults
  for (const jitc::Mode mode : {jitc::Mode::kDefault, jitc::Mode::kReduceOverhead}) {
    INFO("mode " << jitc::to_string(mode));
    // A stream of the caller's own: the replayed and the compiled calls run on it.
    c10::cuda::CUDAStreamGuard stream(c10::cuda::getStreamFromPool());
    const auto x = at::randn({64, 32}, at::kCUDA), w = at::randn({32, 32}, at::kCUDA) * 0.2;
    jitc::Options options;
    options.mode = mode;
    auto compiled = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return layers(x, w); }, options);
    auto check = [&] { CHECK(difference(compiled(x, w), layers(x, w), reduction_tolerance(at::kFloat, 32)) == ""); };
    check();  // traced: the build starts
    CHECK(calls_until_built(compiled, check) > 0);
    REQUIRE(compiled.stats().programs_compiled == 1);
    for (int call = 0; call < 4; ++call) check();
    CHECK(compiled.stats().eager_fallbacks == 0);
    // Reduce-overhead's program may come from the in-memory cache (default mode's, the same graph).
    CHECK(compiled.stats().kernels_compiled + compiled.stats().programs_from_cache > 0);
    if (mode == jitc::Mode::kReduceOverhead) CHECK(compiled.stats().cudagraph_replays > 0);
  }
}

TEST_CASE("CUDA training steps replay eagerly while the forward and backward programs build", "[cuda][background]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  jitc::testing::ScopedEnv background("JITC_COMPILE_IN_BACKGROUND", "1");
  jitc::testing::ScopedEnv at_trace("JITC_BUILD_AT_TRACE", "1");  // the defaults
  jitc::testing::check_training_steps_while_building(at::kCUDA);
}
