// Checks of jitc::optim (include/jitc/optim.h: AdamW, Adam, SGD, RMSprop, Adagrad) against torch::optim, shared by the CPU tests
// (test_optim.cpp) and their CUDA twins (test_training_cuda.cpp): the same gradients fed to both
// optimizers step after step; parameters, state and step counts compared after every step.
#pragma once
#include "support/log_capture.h"
#include "support/random_choices.h"
#include "training/call_semantics_checks.h"
#include "training/training_support.h"

#include <jitc/optim.h>

#include <torch/serialize.h>

#include <algorithm>
#include <optional>
#include <tuple>
#include <sstream>

namespace jitc::testing {

// Parameters of several shapes (a layer's weight and bias, a vector, a scalar), the same values twice.
inline std::pair<Tensors, Tensors> twin_parameters(at::Device device, at::ScalarType dtype = at::kFloat) {
  Tensors a, b;
  for (const auto& shape : std::vector<std::vector<int64_t>>{{16, 8}, {16}, {4, 16}, {4}, {}}) {
    const at::Tensor value = at::randn(shape, at::TensorOptions(dtype).device(device));
    a.push_back(value.clone().requires_grad_(true));
    b.push_back(value.clone().requires_grad_(true));
  }
  return {a, b};
}

// Gives both lists the same fresh gradients; a parameter in `skip` gets none this step.
inline void set_gradients(const Tensors& a, const Tensors& b, const std::vector<size_t>& skip = {}) {
  for (size_t i = 0; i < a.size(); ++i) {
    const bool none = std::find(skip.begin(), skip.end(), i) != skip.end();
    const at::Tensor g = none ? at::Tensor() : at::randn_like(a[i]);
    a[i].mutable_grad() = none ? at::Tensor() : g.clone();
    b[i].mutable_grad() = none ? at::Tensor() : g.clone();
  }
}

inline void check_same_parameters(const Tensors& got, const Tensors& want, double tol) {
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("parameter " << i << ": " << describe(got[i].detach(), want[i].detach()));
    CHECK(close(got[i].detach(), want[i].detach(), tol));
  }
}

inline jitc::Options built_on_the_call() {
  jitc::Options options;
  options.compile_in_background = false;  // the first hit runs compiled code, not eager replay
  return options;
}

// `steps` steps of jitc's and torch's optimizer from the same parameters and gradients. The first step
// of an optimizer with state is torch::optim's own (it creates the state, `torch_steps` 1), the next one
// traces, and every later step is a compiled hit.
template <class JitcOptimizer, class TorchOptimizer, class GroupOptions>
void check_optimizer_follows_torch(const char* name, const GroupOptions& options, at::Device device, const jitc::Options& compile_options,
                                   int torch_steps = 1, int steps = 8, double tol = 1e-6) {
  INFO(name);
  at::manual_seed(7);
  auto [mine, theirs] = twin_parameters(device);
  JitcOptimizer optimizer(mine, options, compile_options);
  TorchOptimizer reference(theirs, options);
  for (int step = 0; step < steps; ++step) {
    INFO("step " << step);
    set_gradients(mine, theirs);
    optimizer.step();
    reference.step();
    check_same_parameters(mine, theirs, tol);
  }
  const Stats stats = optimizer.stats();
  CHECK(stats.compiles == 1);
  CHECK(stats.recompiles == 0);
  CHECK(stats.eager_fallbacks == 0);
  CHECK(stats.hits == steps - torch_steps - 1);
  CHECK(stats.programs_compiled == 1);
}

// A param group over two devices runs torch::optim's own step (its learning-rate tensor would sit on
// one of them).
inline void check_group_over_devices(at::Device device) {
  at::manual_seed(13);
  auto [mine, theirs] = twin_parameters(device);
  for (auto* list : {&mine, &theirs}) (*list)[4] = (*list)[4].detach().cpu().requires_grad_(true);
  optim::AdamW optimizer(mine, torch::optim::AdamWOptions(1e-2), built_on_the_call());
  torch::optim::AdamW reference(theirs, torch::optim::AdamWOptions(1e-2));
  for (int step = 0; step < 3; ++step) {
    set_gradients(mine, theirs);
    optimizer.step();
    reference.step();
    check_same_parameters(mine, theirs, 1e-6);
  }
  CHECK(optimizer.stats().calls == 0);
}

inline void check_optimizers_follow_torch(at::Device device, const jitc::Options& options = built_on_the_call()) {
  namespace to = torch::optim;
  check_optimizer_follows_torch<optim::AdamW, to::AdamW>("AdamW", to::AdamWOptions(1e-2), device, options);
  check_optimizer_follows_torch<optim::AdamW, to::AdamW>("AdamW amsgrad", to::AdamWOptions(1e-2).amsgrad(true).weight_decay(0.1), device,
                                                         options);
  check_optimizer_follows_torch<optim::AdamW, to::AdamW>("AdamW without decay", to::AdamWOptions(3e-3).weight_decay(0).betas({0.8, 0.99}),
                                                         device, options);
  check_optimizer_follows_torch<optim::Adam, to::Adam>("Adam", to::AdamOptions(1e-2), device, options);
  check_optimizer_follows_torch<optim::Adam, to::Adam>("Adam with decay", to::AdamOptions(1e-2).weight_decay(0.05).eps(1e-6), device,
                                                       options);
  check_optimizer_follows_torch<optim::Adam, to::Adam>("Adam amsgrad", to::AdamOptions(1e-2).amsgrad(true), device, options);
  check_optimizer_follows_torch<optim::SGD, to::SGD>("SGD", to::SGDOptions(0.1), device, options, /*torch_steps=*/0);
  check_optimizer_follows_torch<optim::SGD, to::SGD>("SGD momentum", to::SGDOptions(0.1).momentum(0.9), device, options);
  check_optimizer_follows_torch<optim::SGD, to::SGD>("SGD nesterov", to::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-2),
                                                     device, options);
  check_optimizer_follows_torch<optim::SGD, to::SGD>("SGD dampening", to::SGDOptions(0.05).momentum(0.5).dampening(0.1), device, options);
  check_optimizer_follows_torch<optim::RMSprop, to::RMSprop>("RMSprop", to::RMSpropOptions(1e-2), device, options);
  check_optimizer_follows_torch<optim::RMSprop, to::RMSprop>(
      "RMSprop centered with momentum", to::RMSpropOptions(1e-2).momentum(0.5).centered(true).weight_decay(1e-2), device, options);
  check_optimizer_follows_torch<optim::Adagrad, to::Adagrad>("Adagrad", to::AdagradOptions(0.1), device, options, /*torch_steps=*/0);
  check_optimizer_follows_torch<optim::Adagrad, to::Adagrad>(
      "Adagrad with decays", to::AdagradOptions(0.1).lr_decay(0.3).weight_decay(0.05).initial_accumulator_value(0.1), device, options,
      /*torch_steps=*/0);
}

// A learning rate changed at every step (a schedule) is the group's lr tensor, written in place: no
// recompile. Two param groups with their own options; a parameter without a gradient in some steps keeps
// its own step count (the bias corrections differ per parameter).
inline void check_schedules_groups_and_skipped_parameters(at::Device device, const jitc::Options& options = built_on_the_call()) {
  at::manual_seed(8);
  auto [mine, theirs] = twin_parameters(device);
  auto groups = [](const Tensors& p) {
    return std::vector<torch::optim::OptimizerParamGroup>{
        torch::optim::OptimizerParamGroup({p[0], p[1]}),
        torch::optim::OptimizerParamGroup(
            {p[2], p[3], p[4]}, std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(5e-3).weight_decay(0.2)))};
  };
  optim::AdamW optimizer(groups(mine), torch::optim::AdamWOptions(1e-2), options);
  torch::optim::AdamW reference(groups(theirs), torch::optim::AdamWOptions(1e-2));
  for (int step = 0; step < 10; ++step) {
    INFO("step " << step);
    set_gradients(mine, theirs, step % 3 == 2 ? std::vector<size_t>{3} : std::vector<size_t>{});
    for (auto* opt : {static_cast<torch::optim::Optimizer*>(&optimizer), static_cast<torch::optim::Optimizer*>(&reference)})
      for (auto& group : opt->param_groups()) group.options().set_lr(group.options().get_lr() * 0.9);
    optimizer.step();
    reference.step();
    check_same_parameters(mine, theirs, 1e-6);
  }
  const Stats stats = optimizer.stats();
  CHECK(stats.eager_fallbacks == 0);
  CHECK(stats.hits >= 10);
  // The first group: one entry. The second: its parameters with one shared step count (until parameter 3
  // misses a step), the two others with one count (the steps parameter 3 misses), all three with a count
  // each (since parameter 3 is behind).
  CHECK(stats.compiles == 4);
  const auto& state = static_cast<torch::optim::AdamWParamState&>(*optimizer.state().at(mine[3].unsafeGetTensorImpl()));
  const auto& want = static_cast<torch::optim::AdamWParamState&>(*reference.state().at(theirs[3].unsafeGetTensorImpl()));
  CHECK(state.step() == want.step());
  CHECK(state.step() == 7);
}

// save() after compiled steps writes torch::optim's archive (int step counts included); it loads into
// torch::optim::AdamW and into jitc's, and both go on as the optimizer that never stopped.
inline void check_save_and_load(at::Device device, const jitc::Options& options = built_on_the_call()) {
  at::manual_seed(9);
  auto [mine, theirs] = twin_parameters(device);
  optim::AdamW optimizer(mine, torch::optim::AdamWOptions(1e-2).amsgrad(true), options);
  torch::optim::AdamW reference(theirs, torch::optim::AdamWOptions(1e-2).amsgrad(true));
  for (int step = 0; step < 5; ++step) {
    set_gradients(mine, theirs);
    optimizer.step();
    reference.step();
  }
  std::stringstream saved;
  torch::save(optimizer, saved);
  Tensors copy_a, copy_b;
  for (const auto& p : mine) {
    copy_a.push_back(p.detach().clone().requires_grad_(true));
    copy_b.push_back(p.detach().clone().requires_grad_(true));
  }
  optim::AdamW loaded(copy_a, torch::optim::AdamWOptions(1e-2).amsgrad(true), options);
  torch::optim::AdamW loaded_by_torch(copy_b, torch::optim::AdamWOptions(1e-2).amsgrad(true));
  torch::load(loaded, saved);
  saved.seekg(0);
  torch::load(loaded_by_torch, saved);
  for (int step = 0; step < 4; ++step) {
    INFO("step " << step << " after loading");
    set_gradients(mine, theirs);
    for (size_t i = 0; i < mine.size(); ++i) copy_a[i].mutable_grad() = copy_b[i].mutable_grad() = mine[i].grad().clone();
    optimizer.step();
    reference.step();
    loaded.step();
    loaded_by_torch.step();
    check_same_parameters(mine, theirs, 1e-6);
    check_same_parameters(copy_a, theirs, 1e-6);
    check_same_parameters(copy_b, theirs, 1e-6);
  }
  CHECK(loaded.stats().hits >= 2);
}

// A whole training step of a linear layer: gradients zeroed in place (a step that sets them to none runs
// eagerly in grad mode, README), a loss, its backward and the optimizer's step.
inline at::Tensor linear_training_step(torch::nn::Linear& layer, torch::optim::Optimizer& opt, const at::Tensor& x) {
  opt.zero_grad(false);
  at::Tensor loss = layer(x).tanh().pow(2).mean();
  loss.backward();
  opt.step();
  return loss.detach();
}

// A whole training step compiled (zero_grad, forward, backward, jitc's step): the update is inlined into
// the step's graph, whose replays advance the step-count tensors; save() then writes the counts of every
// step taken. Gradients are zeroed in place: a step that sets them to none runs eagerly in grad mode (README).
inline void check_step_inside_a_compiled_training_step(at::Device device, const jitc::Options& options = {}) {
  at::manual_seed(10);
  auto [eager_model, model] = twin_linears(4, 2, device);
  torch::optim::AdamW reference(eager_model->parameters(), torch::optim::AdamWOptions(1e-2));
  optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-2), options);
  const auto step = linear_training_step;
  auto compiled = jitc::compile([&](const at::Tensor& x) { return step(model, optimizer, x); }, options);
  const int steps = 8;
  for (int call = 0; call < steps; ++call) {
    INFO("step " << call);
    const at::Tensor x = at::randn({8, 4}, at::TensorOptions(device));
    const at::Tensor expected = step(eager_model, reference, x);
    CHECK(at::allclose(compiled(x), expected, 1e-5, 1e-6));
    CHECK(at::allclose(model->weight, eager_model->weight, 1e-5, 1e-6));
    CHECK(at::allclose(model->bias, eager_model->bias, 1e-5, 1e-6));
  }
  // The first call creates the gradients (its trace is its execution, counted as eager), the second traces
  // again (torch::optim's own step creates the state), the third is the first hit's check: then hits only.
  CHECK(compiled.stats().eager_fallbacks == 1);
  CHECK(compiled.stats().hits == steps - 3);
  // Another batch size traces again, after replays that advanced the step-count tensors only: the new
  // entry goes on from the counts the replays reached, and save() below writes them.
  for (int call = 0; call < 3; ++call) {
    INFO("step " << call << " at batch 5");
    const at::Tensor x = at::randn({5, 4}, at::TensorOptions(device));
    const at::Tensor expected = step(eager_model, reference, x);
    CHECK(at::allclose(compiled(x), expected, 1e-5, 1e-6));
    CHECK(at::allclose(model->weight, eager_model->weight, 1e-5, 1e-6));
    CHECK(at::allclose(model->bias, eager_model->bias, 1e-5, 1e-6));
  }
  std::stringstream saved;
  torch::save(optimizer, saved);
  torch::optim::AdamW loaded(model->parameters(), torch::optim::AdamWOptions(1e-2));
  torch::load(loaded, saved);
  CHECK(static_cast<torch::optim::AdamWParamState&>(*loaded.state().at(model->weight.unsafeGetTensorImpl())).step() == steps + 3);
}

// A whole training step compiled while a schedule sets the learning rate before every call, and another
// option once: the step's replays run no C++ code, so each run of its entry first writes the group's
// learning rate into the tensor the graph reads, and the other option traces the step again, which
// follows that option as torch::optim's step does.
template <class Mine, class Theirs, class GroupOptions, class Change>
void check_options_set_between_compiled_steps(at::Device device, GroupOptions defaults, Change change, const jitc::Options& options = {}) {
  at::manual_seed(13);
  auto [eager_model, model] = twin_linears(4, 2, device);
  Theirs reference(eager_model->parameters(), defaults);
  Mine optimizer(model->parameters(), defaults, options);
  const auto step = linear_training_step;
  auto compiled = jitc::compile([&](const at::Tensor& x) { return step(model, optimizer, x); }, options);
  const int steps = 12, changed_at = 7;
  for (int call = 0; call < steps; ++call) {
    INFO("step " << call);
    for (torch::optim::Optimizer* opt :
         {static_cast<torch::optim::Optimizer*>(&reference), static_cast<torch::optim::Optimizer*>(&optimizer)}) {
      auto& group = static_cast<GroupOptions&>(opt->param_groups()[0].options());
      group.lr(defaults.lr() * std::pow(0.7, call));
      if (call == changed_at) change(group);
    }
    const at::Tensor x = at::randn({8, 4}, at::TensorOptions(device));
    const at::Tensor expected = step(eager_model, reference, x);
    CHECK(at::allclose(compiled(x), expected, 1e-5, 1e-6));
    CHECK(at::allclose(model->weight, eager_model->weight, 1e-5, 1e-6));
    CHECK(at::allclose(model->bias, eager_model->bias, 1e-5, 1e-6));
  }
  const Stats stats = compiled.stats();
  CHECK(stats.recompiles == 1);
  REQUIRE(stats.recompile_reasons.size() == 1);
  CHECK_THAT(stats.recompile_reasons[0], Catch::Contains("param group 0 changed (other than lr)"));
  CHECK(stats.hits >= 5);  // calls 4-6 and 9-11 at least: the learning rates reached them through the tensor
}

template <class Mine, class Theirs, class GroupOptions>
void check_same_bits_through_eager_replay(const char* name, const GroupOptions& options, at::ScalarType dtype, at::Device device) {
  INFO(name << " " << c10::toString(dtype));
  at::manual_seed(17);
  auto [mine, theirs] = twin_parameters(device, dtype);
  jitc::Options replayed = built_on_the_call();
  replayed.backend = jitc::Backend::kEager;  // the update's ATen ops as written, without fusion
  Mine optimizer(mine, options, replayed);
  Theirs reference(theirs, options);
  for (int step = 0; step < 5; ++step) {
    INFO("step " << step);
    set_gradients(mine, theirs);
    optimizer.step();
    reference.step();
    check_same_parameters(mine, theirs, 0);
  }
}

// The learning rate is a tensor: a product by it would be rounded to the parameter's type before the add
// that torch::optim's Scalar form rounds once (Adam's addcdiv_, RMSprop's, Adagrad's). (`add_(x, -lr)`,
// SGD's and RMSprop's with momentum, is a fused multiply-add in ATen's kernel, which no ATen op taking
// the learning rate as a tensor computes: those differ by the product's rounding, at most an ulp.)
inline void check_low_precision_updates_round_as_torch(at::Device device) {
  for (const auto dtype : {at::kHalf, at::kBFloat16}) {
    check_same_bits_through_eager_replay<optim::AdamW, torch::optim::AdamW>("AdamW", torch::optim::AdamWOptions(1e-2).weight_decay(0.1),
                                                                            dtype, device);
    check_same_bits_through_eager_replay<optim::Adam, torch::optim::Adam>("Adam", torch::optim::AdamOptions(1e-2).amsgrad(true), dtype,
                                                                          device);
    check_same_bits_through_eager_replay<optim::RMSprop, torch::optim::RMSprop>(
        "RMSprop", torch::optim::RMSpropOptions(1e-2).centered(true), dtype, device);
    check_same_bits_through_eager_replay<optim::Adagrad, torch::optim::Adagrad>("Adagrad", torch::optim::AdagradOptions(1e-1).lr_decay(0.1),
                                                                                dtype, device);
  }
}

// A whole training step compiled, then a group's options object replaced (OptimizerParamGroup::set_options)
// and a param group added between calls: the step's replays would step the traced groups with the traced
// options, so each change traces the step again, which follows torch::optim's.
inline void check_groups_changed_between_compiled_steps(at::Device device) {
  at::manual_seed(18);
  auto [eager_model, model] = twin_linears(4, 2, device);
  const at::Tensor start = at::randn({3}, at::TensorOptions(device));
  const at::Tensor eager_extra = start.clone().requires_grad_(true), extra = start.clone().requires_grad_(true);
  torch::optim::AdamW reference(eager_model->parameters(), torch::optim::AdamWOptions(1e-2));
  optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-2), built_on_the_call());
  auto step = [](torch::nn::Linear& layer, const at::Tensor& more, torch::optim::Optimizer& opt, const at::Tensor& x) {
    opt.zero_grad(false);
    at::Tensor loss = layer(x).tanh().pow(2).mean() + more.pow(2).sum();
    loss.backward();
    opt.step();
    return loss.detach();
  };
  auto compiled = jitc::compile([&](const at::Tensor& x) { return step(model, extra, optimizer, x); }, built_on_the_call());
  for (int call = 0; call < 12; ++call) {
    INFO("step " << call);
    if (call == 5) {
      for (torch::optim::Optimizer* opt : {static_cast<torch::optim::Optimizer*>(&reference), static_cast<torch::optim::Optimizer*>(&optimizer)})
        opt->param_groups()[0].set_options(std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(1e-1).betas({0.5, 0.9})));
    }
    if (call == 9) {  // its new state is made by torch::optim's step in the trace: grad-mode calls run eagerly from then on
      reference.add_param_group(torch::optim::OptimizerParamGroup({eager_extra}));
      optimizer.add_param_group(torch::optim::OptimizerParamGroup({extra}));
    }
    const at::Tensor x = at::randn({8, 4}, at::TensorOptions(device));
    const at::Tensor expected = step(eager_model, eager_extra, reference, x);
    CHECK(at::allclose(compiled(x), expected, 1e-5, 1e-6));
    CHECK(at::allclose(model->weight, eager_model->weight, 1e-5, 1e-6));
    CHECK(at::allclose(extra, eager_extra, 1e-5, 1e-6));
  }
  const auto reasons = compiled.stats().recompile_reasons;
  const auto mentions = [&](const char* text) {
    return std::any_of(reasons.begin(), reasons.end(), [&](const std::string& r) { return r.find(text) != std::string::npos; });
  };
  CHECK(mentions("has 2 param groups, 1 when its step was traced"));
  for (const auto& r : reasons) INFO(r);
  CHECK(mentions("param group 0 changed (other than lr)"));
}

// One random run: parameters of random shapes (0-dim, empty, channels-last among them) in one or two
// param groups with random options, six steps with parameters left without a gradient and learning rates
// changed at random, jitc::optim against torch::optim after every step. A seed names its run.
class RandomOptimizerRun : RandomChoices {
 public:
  RandomOptimizerRun(uint32_t seed, at::Device device) : RandomChoices(seed), seed_(seed), device_(device) {}

  int64_t run() {
    switch (uniform(0, 4)) {
      case 0: return compare<optim::AdamW, torch::optim::AdamW>([&] { return adam_like<torch::optim::AdamWOptions>(); });
      case 1: return compare<optim::Adam, torch::optim::Adam>([&] { return adam_like<torch::optim::AdamOptions>(); });
      case 2: return compare<optim::SGD, torch::optim::SGD>([&] { return sgd(); });
      case 3: return compare<optim::RMSprop, torch::optim::RMSprop>([&] { return rmsprop(); });
      default: return compare<optim::Adagrad, torch::optim::Adagrad>([&] { return adagrad(); });
    }
  }

 private:
  template <class O>
  O adam_like() {
    return O(pick<double>({1e-3, 1e-2}))
        .betas(pick<std::tuple<double, double>>({{0.9, 0.999}, {0.8, 0.95}}))
        .eps(pick<double>({1e-8, 1e-6}))
        .weight_decay(pick<double>({0, 0.01, 0.1}))
        .amsgrad(chance(0.5));
  }
  torch::optim::SGDOptions sgd() {
    const double momentum = pick<double>({0, 0.5, 0.9});
    const bool nesterov = momentum > 0 && chance(0.5);
    return torch::optim::SGDOptions(pick<double>({0.01, 0.1}))
        .momentum(momentum)
        .dampening(nesterov ? 0 : pick<double>({0, 0.1}))
        .nesterov(nesterov)
        .weight_decay(pick<double>({0, 1e-2}));
  }
  torch::optim::RMSpropOptions rmsprop() {
    return torch::optim::RMSpropOptions(pick<double>({1e-3, 1e-2}))
        .alpha(pick<double>({0.99, 0.9}))
        .eps(pick<double>({1e-8, 1e-6}))
        .weight_decay(pick<double>({0, 1e-2}))
        .momentum(pick<double>({0, 0.5}))
        .centered(chance(0.5));
  }
  torch::optim::AdagradOptions adagrad() {
    return torch::optim::AdagradOptions(pick<double>({0.01, 0.1}))
        .lr_decay(pick<double>({0, 0.1}))
        .weight_decay(pick<double>({0, 1e-2}))
        .initial_accumulator_value(pick<double>({0, 0.1}))
        .eps(pick<double>({1e-10, 1e-6}));
  }

  std::pair<Tensors, Tensors> parameters() {
    Tensors a, b;
    const std::vector<std::vector<int64_t>> shapes{{}, {0}, {7}, {5, 3}, {3, 0}, {2, 3, 4, 5}, {33}};
    for (int i = uniform(2, 5); i > 0; --i) {
      const auto& shape = pick(shapes);
      at::Tensor value = at::randn(shape, at::TensorOptions(device_));
      if (shape.size() == 4 && chance(0.5)) value = value.contiguous(at::MemoryFormat::ChannelsLast);
      a.push_back(value.clone().requires_grad_(true));
      b.push_back(value.clone().requires_grad_(true));
    }
    return {a, b};
  }

  template <class Options>
  std::vector<torch::optim::OptimizerParamGroup> groups(const Tensors& p, size_t split, const std::optional<Options>& second) {
    if (!second) return {torch::optim::OptimizerParamGroup(p)};
    return {torch::optim::OptimizerParamGroup(Tensors(p.begin(), p.begin() + split)),
            torch::optim::OptimizerParamGroup(Tensors(p.begin() + split, p.end()), std::make_unique<Options>(*second))};
  }

  // Returns the compiled hits.
  template <class Jitc, class Torch, class Make>
  int64_t compare(Make make_options) {
    auto [mine, theirs] = parameters();
    const auto defaults = make_options();
    std::optional<std::decay_t<decltype(defaults)>> second;
    const size_t split = static_cast<size_t>(uniform(1, static_cast<int>(mine.size()) - 1));
    if (chance(0.5)) second = make_options();
    jitc::Options compile;
    compile.compile_in_background = chance(0.5);
    Jitc optimizer(groups(mine, split, second), defaults, compile);
    Torch reference(groups(theirs, split, second), defaults);
    for (int step = 0; step < 6; ++step) {
      INFO("seed " << seed_ << ", step " << step);
      std::vector<size_t> skip;
      for (size_t i = 0; i < mine.size(); ++i)
        if (chance(0.2)) skip.push_back(i);
      set_gradients(mine, theirs, skip);
      const double scale = chance(0.5) ? 0.5 : 1.0;
      for (auto* opt : {static_cast<torch::optim::Optimizer*>(&optimizer), static_cast<torch::optim::Optimizer*>(&reference)})
        for (auto& group : opt->param_groups()) group.options().set_lr(group.options().get_lr() * scale);
      optimizer.step();
      reference.step();
      check_same_parameters(mine, theirs, 1e-5);
    }
    const Stats stats = optimizer.stats();
    CHECK(stats.recompiles <= 4);  // entries differ by the parameters with gradients only
    CHECK(stats.eager_fallbacks == 0);
    return stats.hits;
  }

  uint32_t seed_;
  at::Device device_;
};

}  // namespace jitc::testing
