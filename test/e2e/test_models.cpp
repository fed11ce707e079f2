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
    const at::Tensor expected = model.forward(x);
    for (int call = 0; call < 2; ++call) CHECK(jitc::testing::difference(compiled(x), expected, {1e-4, 1e-5}) == "");
    const auto stats = compiled.stats();
    CHECK(stats.eager_fallbacks == 0);
    CHECK(stats.hits == 1);
  }
}
