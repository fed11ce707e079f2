// The model suite (benchmarks/models/models.h) at small shapes with the published structures: every model
// compiled with jitc gives eager's result, on a replay as on the first call, with no eager fallback. The
// suite's speed is measured by bench_models, not here.
#include "models/models.h"
#include "support/parity.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

TEST_CASE("the model suite's models match eager at small shapes", "[models]") {
  c10::InferenceMode inference;
  for (const auto& model : jitc::bench::make_models(jitc::bench::ModelScale::kTest)) {
    INFO(model.name);
    const at::Tensor x = model.make_input();
    auto compiled = jitc::compile(model.forward);
    auto call = [&](const at::Tensor& input) { return compiled(input); };
    const at::Tensor expected = jitc::bench::results_from_start(model, model.forward, x);
    // The first time traces (and runs eagerly), the second replays the compiled program; a model with
    // state (a decoder's KV cache) compares its first three steps from a reset.
    for (int time = 0; time < 2; ++time)
      CHECK(jitc::testing::difference(jitc::bench::results_from_start(model, call, x), expected, {1e-4, 1e-5}) == "");
    const auto stats = compiled.stats();
    CHECK(stats.eager_fallbacks == 0);
    CHECK(stats.hits >= 1);
    CHECK(stats.recompiles == 0);
  }
}
