// jitc::optim's optimizers against torch::optim's on the CPU (the checks: optim_checks.h).
#include "training/optim_checks.h"

namespace jitc::testing {
namespace {

TEST_CASE("jitc::optim AdamW, Adam, SGD, RMSprop and Adagrad steps follow torch::optim's step after step, compiled from the second", "[training][optim]") {
  check_optimizers_follow_torch(at::kCPU);
}

TEST_CASE("jitc::optim learning-rate schedules recompile nothing, param groups and parameters without gradients step as torch::optim's",
          "[training][optim]") {
  check_schedules_groups_and_skipped_parameters(at::kCPU);
}

TEST_CASE("jitc::optim state saved after compiled steps loads into torch::optim and jitc::optim, which go on as the original",
          "[training][optim]") {
  check_save_and_load(at::kCPU);
}

TEST_CASE("jitc::optim steps inside a compiled training step follow torch::optim's and save every step's count", "[training][optim]") {
  check_step_inside_a_compiled_training_step(at::kCPU);
}

TEST_CASE("jitc::optim steps inside a compiled training step see the learning rate set before each call, and other options trace again",
          "[training][optim]") {
  check_options_set_between_compiled_steps<optim::AdamW, torch::optim::AdamW>(
      at::kCPU, torch::optim::AdamWOptions(1e-2), [](torch::optim::AdamWOptions& o) { o.betas({0.8, 0.99}); });
  check_options_set_between_compiled_steps<optim::SGD, torch::optim::SGD>(
      at::kCPU, torch::optim::SGDOptions(0.1).momentum(0.9), [](torch::optim::SGDOptions& o) { o.momentum(0.5); });
}

TEST_CASE("jitc::optim with a sparse gradient does what torch::optim does: Adam raises its error, SGD steps", "[training][optim]") {
  at::manual_seed(11);
  auto [mine, theirs] = twin_parameters(at::kCPU);
  optim::Adam adam(mine, torch::optim::AdamOptions(1e-2));
  mine[1].mutable_grad() = at::randn({16}).to_sparse();
  CHECK_THROWS_WITH(adam.step(), Catch::Contains("Adam does not support sparse gradients"));
  optim::SGD sgd(mine, torch::optim::SGDOptions(0.1));
  torch::optim::SGD reference(theirs, torch::optim::SGDOptions(0.1));
  for (int step = 0; step < 3; ++step) {
    set_gradients(mine, theirs);
    const at::Tensor sparse = at::randn({16}).to_sparse();
    mine[1].mutable_grad() = sparse.clone();
    theirs[1].mutable_grad() = sparse.clone();
    sgd.step();
    reference.step();
    check_same_parameters(mine, theirs, 1e-6);
  }
}

TEST_CASE("jitc::optim steps with a closure return its loss and follow torch::optim", "[training][optim]") {
  at::manual_seed(12);
  auto [mine, theirs] = twin_parameters(at::kCPU);
  optim::AdamW optimizer(mine, torch::optim::AdamWOptions(1e-2), built_on_the_call());
  torch::optim::AdamW reference(theirs, torch::optim::AdamWOptions(1e-2));
  for (int step = 0; step < 4; ++step) {
    auto closure_of = [](const Tensors& params) {
      return [params]() {
        at::Tensor loss = at::zeros({});
        for (const auto& p : params) loss = loss + p.pow(2).sum();
        for (const auto& p : params) p.mutable_grad() = at::Tensor();
        loss.backward();
        return loss;
      };
    };
    const at::Tensor got = optimizer.step(closure_of(mine)), want = reference.step(closure_of(theirs));
    CHECK(at::allclose(got, want, 1e-6, 1e-6));
    check_same_parameters(mine, theirs, 1e-6);
  }
  CHECK(optimizer.stats().hits == 2);
}

TEST_CASE("jitc::optim steps with random options, param groups, skipped gradients and learning-rate changes follow torch::optim's",
          "[training][optim]") {
  int64_t hits = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) hits += RandomOptimizerRun(seed, at::kCPU).run();
  CHECK(hits >= 100);  // most steps after each entry's trace ran compiled code (160 when written)
}

}  // namespace
}  // namespace jitc::testing
