// A random differential test of compiled training on the CPU (training/random_training.h).
// JITC_RANDOM_SEEDS=<n> / JITC_RANDOM_SEED=<s> as for the inference fuzzer.
#include "support/log_capture.h"
#include "training/random_cnn.h"
#include "training/random_training.h"

#include <cstdlib>

namespace {

// 150 programs take about 10 s on the 2-core developer host (a training trace, then two compiles each).
constexpr uint32_t kSeeds = 150;

// Seeds that found gradients lost to a value rounded differently in two loops (vector_math.h): amax's
// gradient compares its input with its result.
constexpr uint32_t kRegressionSeeds[] = {1425, 1822, 2058, 2467};

}  // namespace

TEST_CASE("random graphs of pointwise reduction and view ops: compiled gradients equal eager's", "[training][random]") {
  using namespace jitc::testing::random_training;
  const auto [first, end] = jitc::testing::random_graphs::seed_range(kSeeds);
  int trained = 0;
  for (uint32_t seed = first; seed < end; ++seed) {
    jitc::testing::LogCapture logs;
    const jitc::Stats stats = check_gradients(generate(seed, Normalizations::kAnyDims), at::kCPU);
    trained += stats.hits == 1 && logs.lines_with("eagerly").empty();
  }
  if (end - first >= 20) CHECK(trained * 10 >= static_cast<int>(end - first) * 9);  // nearly every program trains compiled
  if (!std::getenv("JITC_RANDOM_SEED"))
    for (uint32_t seed : kRegressionSeeds) check_gradients(generate(seed, Normalizations::kAnyDims), at::kCPU);
}

TEST_CASE("random graphs with in-place writes into their own values: compiled gradients equal eager's, or both raise", "[training][random]") {
  using namespace jitc::testing::random_training;
  const auto [first, end] = jitc::testing::random_graphs::seed_range(kSeeds / 2);
  for (uint32_t seed = first; seed < end; ++seed) check_gradients(generate(seed, Normalizations::kAnyDims, InPlace::kIntermediates), at::kCPU);
}

// Random convolutional networks (training/random_cnn.h), trained channels-last where their activations
// outweigh their weights. A few seeds in CI (each compiles a forward and a backward); JITC_RANDOM_SEEDS=<n>
// runs more.
TEST_CASE("random convolutional networks train compiled as in eager", "[training][random]") {
  const auto [first, end] = jitc::testing::random_graphs::seed_range(6);
  for (uint32_t seed = first; seed < end; ++seed) jitc::testing::random_cnn::check_training(seed, at::kCPU);
}

TEST_CASE("random convolutional networks compiled for inference match eager in eval and train mode", "[training][random]") {
  const auto [first, end] = jitc::testing::random_graphs::seed_range(6);
  for (uint32_t seed = first; seed < end; ++seed)
    for (bool train : {false, true}) jitc::testing::random_cnn::check_inference(seed, at::kCPU, train);
}
