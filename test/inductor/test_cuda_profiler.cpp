// Compiled CUDA calls in LibTorch's profiler ([cuda]: skipped without a GPU): the call is a region, and
// its kernels reach kineto through CUPTI under their descriptive function names.
#include "support/profile.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <catch2/catch.hpp>

using jitc::testing::ActivityType;
using jitc::testing::events_named;
using jitc::testing::events_where;

TEST_CASE("CUDA profiler: a compiled call is a region and its kernels carry their fused names", "[cuda][profiler]") {
  if (!(at::hasCUDA() && c10::cuda::device_count() > 0)) {
    WARN("no CUDA device: skipped");
    return;
  }
  c10::InferenceMode inference;
  jitc::Options options;
  options.name = "profiled_cuda";
  auto f = jitc::compile([](const at::Tensor& x) { return (x.sin() + 1).relu(); }, options);
  const auto x = at::randn({1024, 256}, at::kCUDA);
  f(x);
  f(x);  // the first hit compiles the program: profile a later one
  c10::cuda::device_synchronize();
  const auto result = jitc::testing::profile(
      [&] {
        f(x);
        c10::cuda::device_synchronize();
      },
      {ActivityType::CPU, ActivityType::CUDA});
  INFO("events:" << jitc::testing::event_names(*result));
  const auto regions = events_where(*result, [](const std::string& n) { return n.rfind("jitc-compiled region: profiled_cuda [", 0) == 0; });
  // kineto shows the region twice: the host's range and its GPU user annotation (the span of the work it
  // launched on the device).
  size_t on_host = 0;
  for (const auto* r : regions) on_host += r->deviceType() == c10::DeviceType::CPU;
  CHECK(on_host == 1);
  CHECK(regions.size() <= 2);
  const auto kernels = events_named(*result, "jitc_fused_sin_add_relu_0");
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0]->deviceType() == c10::DeviceType::CUDA);  // the GPU's activity, not a host region
}
