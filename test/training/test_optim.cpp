// jitc::optim's optimizers against torch::optim's on the CPU (the checks: optim_checks.h).
#include "training/optim_checks.h"

namespace jitc::testing {
namespace {

TEST_CASE("jitc::optim AdamW, Adam, SGD, RMSprop and Adagrad steps follow torch::optim's step after step, compiled from the second",
          "[training][optim]") {
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
  check_options_set_between_compiled_steps<optim::AdamW, torch::optim::AdamW>(at::kCPU, torch::optim::AdamWOptions(1e-2),
                                                                              [](torch::optim::AdamWOptions& o) {
                                                                                o.betas({0.8, 0.99});
                                                                              });
  check_options_set_between_compiled_steps<optim::SGD, torch::optim::SGD>(at::kCPU, torch::optim::SGDOptions(0.1).momentum(0.9),
                                                                          [](torch::optim::SGDOptions& o) { o.momentum(0.5); });
}

TEST_CASE("jitc::optim steps inside a compiled training step trace again when a param group is added or its options replaced",
          "[training][optim]") {
  check_groups_changed_between_compiled_steps(at::kCPU);
}

template <class Mine, class Theirs, class State, class GroupOptions>
void check_skipped_parameter_keeps_its_count(const GroupOptions& options) {
  at::manual_seed(14);
  auto [mine, theirs] = twin_parameters(at::kCPU);
  Mine optimizer(mine, options, built_on_the_call());
  Theirs reference(theirs, options);
  auto count = [](const torch::optim::Optimizer& o, const at::Tensor& p) {
    return static_cast<const State&>(*o.state().at(p.unsafeGetTensorImpl())).step();
  };
  for (int step = 0; step < 8; ++step) {
    INFO("step " << step);
    set_gradients(mine, theirs, step == 3 ? std::vector<size_t>{0} : std::vector<size_t>{});
    optimizer.step();
    reference.step();
    if (step == 3 || step == 5) {  // save() and torch's own step write the count tensors into the int counts
      std::stringstream saved;
      torch::save(optimizer, saved);
    }
    if (step == 4) {  // a new parameter: this step is torch::optim's own
      const at::Tensor extra = at::randn({3});
      mine.push_back(extra.clone().requires_grad_(true));
      theirs.push_back(extra.clone().requires_grad_(true));
      optimizer.add_param_group(torch::optim::OptimizerParamGroup({mine.back()}));
      reference.add_param_group(torch::optim::OptimizerParamGroup({theirs.back()}));
    }
    for (size_t i = 0; i < 4; ++i) CHECK(count(optimizer, mine[i]) == count(reference, theirs[i]));
    check_same_parameters(mine, theirs, 1e-6);
  }
}

TEST_CASE("jitc::optim step counts of a parameter that skipped a step stay its own through save() and torch::optim's own steps",
          "[training][optim]") {
  check_skipped_parameter_keeps_its_count<optim::Adam, torch::optim::Adam, torch::optim::AdamParamState>(torch::optim::AdamOptions(1e-2));
  check_skipped_parameter_keeps_its_count<optim::AdamW, torch::optim::AdamW, torch::optim::AdamWParamState>(
      torch::optim::AdamWOptions(1e-2));
}

TEST_CASE("jitc::optim steps a parameter listed twice in a group twice, as torch::optim does", "[training][optim]") {
  at::manual_seed(15);
  auto [mine, theirs] = twin_parameters(at::kCPU);
  optim::Adam optimizer(Tensors{mine[0], mine[1], mine[0]}, torch::optim::AdamOptions(1e-1), built_on_the_call());
  torch::optim::Adam reference(Tensors{theirs[0], theirs[1], theirs[0]}, torch::optim::AdamOptions(1e-1));
  for (int step = 0; step < 5; ++step) {
    INFO("step " << step);
    set_gradients(mine, theirs);
    optimizer.step();
    reference.step();
    check_same_parameters(mine, theirs, 1e-6);
    CHECK(static_cast<torch::optim::AdamParamState&>(*optimizer.state().at(mine[0].unsafeGetTensorImpl())).step() == 2 * (step + 1));
  }
}

TEST_CASE("jitc::optim Adagrad with a param group added later raises torch::optim's error at every step, never crashes",
          "[training][optim]") {
  at::manual_seed(16);
  auto [mine, theirs] = twin_parameters(at::kCPU);
  optim::Adagrad optimizer(Tensors{mine[0]}, torch::optim::AdagradOptions(1e-1), built_on_the_call());
  optimizer.add_param_group(torch::optim::OptimizerParamGroup({mine[1]}));
  for (int step = 0; step < 3; ++step) {
    set_gradients(mine, theirs);
    CHECK_THROWS_WITH(optimizer.step(), Catch::Contains("state_[p.unsafeGetTensorImpl()] != nullptr"));
  }
}

// (On the CPU: ATen's CUDA kernels contract a multiply and an add into one instruction where its eager ops
// are separate kernels, so bits are not promised there.)
TEST_CASE("jitc::optim updates of half and bfloat16 parameters round as torch::optim's, bit for bit through eager replay",
          "[training][optim]") {
  check_low_precision_updates_round_as_torch(at::kCPU);
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
