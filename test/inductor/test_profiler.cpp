// Compiled calls in LibTorch's profiler (kineto): each call is a region named after the function and its
// entry, holding its CPU kernels (named after what they fuse) and its extern ATen calls. Kernel names.
#include "inductor/scheduler.h"
#include "support/profile.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <regex>

using jitc::testing::events_named;
using jitc::testing::events_where;
using jitc::testing::nested;

namespace {

bool is_region_of(const std::string& name, const std::string& function) {
  return name.rfind("jitc-compiled region: " + function + " [", 0) == 0;
}

}  // namespace

TEST_CASE("profiler: a compiled call is a region holding its CPU kernels and extern calls", "[profiler]") {
  c10::InferenceMode inference;
  const auto w = at::randn({16, 16});
  jitc::Options options;
  options.name = "profiled_mlp";
  auto f = jitc::compile([&w](const at::Tensor& x) { return (at::mm(x, w).sin() + 1).relu(); }, options);
  const auto x = at::randn({8, 16});
  f(x);
  f(x);  // the first hit compiles the program: profile a later one
  const auto result = jitc::testing::profile([&] { f(x); });
  INFO("events:" << jitc::testing::event_names(*result));
  const auto regions = events_where(*result, [](const std::string& n) { return is_region_of(n, "profiled_mlp"); });
  REQUIRE(regions.size() == 1);
  CHECK(std::regex_match(regions[0]->name(), std::regex(R"(jitc-compiled region: profiled_mlp \[\d+/0\])")));
  const auto kernels = events_named(*result, "jitc_fused_sin_add_relu_0");
  REQUIRE(kernels.size() == 1);
  CHECK(nested(*kernels[0], *regions[0]));
  const auto mm = events_named(*result, "aten::mm");
  REQUIRE(mm.size() == 1);
  CHECK(nested(*mm[0], *regions[0]));
}

TEST_CASE("profiler: each call and each kernel launch is recorded, under the entry that ran", "[profiler]") {
  c10::InferenceMode inference;
  jitc::Options options;
  options.name = "two_entries";
  auto f = jitc::compile([](const at::Tensor& x) { return x.exp().sum(0) * 2; }, options);
  const auto small = at::randn({4, 8}), large = at::randn({4, 8}, at::kDouble);  // dtype: a second entry
  for (int i = 0; i < 2; ++i) f(small), f(large);
  const auto result = jitc::testing::profile([&] {
    f(small);
    f(large);
    f(small);
  });
  INFO("events:" << jitc::testing::event_names(*result));
  const auto regions = events_where(*result, [](const std::string& n) { return is_region_of(n, "two_entries"); });
  REQUIRE(regions.size() == 3);
  CHECK(regions[0]->name().substr(regions[0]->name().size() - 3) == "/0]");
  CHECK(regions[1]->name().substr(regions[1]->name().size() - 3) == "/1]");
  CHECK(regions[2]->name() == regions[0]->name());
  const auto kernels = events_where(*result, [](const std::string& n) { return n.rfind("jitc_fused_", 0) == 0; });
  REQUIRE(kernels.size() >= 3);
  for (const auto* k : kernels) {
    bool inside = false;
    for (const auto* r : regions) inside |= nested(*k, *r);
    CHECK(inside);
  }
}

TEST_CASE("profiler: without a profiler nothing is recorded and results are unchanged", "[profiler]") {
  c10::InferenceMode inference;
  auto f = jitc::compile([](const at::Tensor& x) { return (x.sin() + 1).relu(); });
  const auto x = at::randn({64});
  f(x);
  const auto before = f(x);
  const auto profiled = [&] {
    at::Tensor y;
    jitc::testing::profile([&] { y = f(x); });
    return y;
  }();
  CHECK(at::equal(before, profiled));
  CHECK(at::equal(f(x), before));
}

TEST_CASE("kernel names: the ops they fuse, bounded, unique by index", "[inductor]") {
  using jitc::inductor::fused_kernel_name;
  CHECK(fused_kernel_name("jitc_fused", {"aten::_softmax.int", "aten::mul.Tensor", "aten::_softmax.int"}, 3) ==
        "jitc_fused_softmax_mul_3");
  CHECK(fused_kernel_name("jitc_fused", {"aten::sin", "aten::cos", "aten::tan", "aten::exp", "aten::log"}, 0) ==
        "jitc_fused_sin_cos_tan_exp_0");
  CHECK(fused_kernel_name("jitc_fused", {}, 2) == "jitc_fused_2");
  const std::string long_op = "aten::" + std::string(100, 'a') + ".out";  // cut to fit
  CHECK(fused_kernel_name("jitc_fused", {long_op, "aten::upsample_bilinear2d_backward", "aten::relu"}, 12) ==
        "jitc_fused_" + std::string(50, 'a') + "_12");
  // Whole names while they fit in kMaxKernelNameLength: relu would not.
  const std::string several = fused_kernel_name(
      "jitc_fused", {"aten::native_layer_norm", "aten::upsample_bilinear2d", "aten::hardsigmoid", "aten::relu"}, 7);
  CHECK(several == "jitc_fused_native_layer_norm_upsample_bilinear2d_hardsigmoid_7");
  CHECK(several.size() <= jitc::inductor::kMaxKernelNameLength);
}
