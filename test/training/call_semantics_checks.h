// Checks of what a call in grad mode means beyond its values, shared by the CPU tests (test_training.cpp)
// and their CUDA twins (test_training_cuda.cpp): a parameter first read without grad, grad mode turned
// on inside a call made without it, outputs that are views written in place afterwards, torch::optim
// steps called through a compiled function (their state kept beyond the call), and steps that read or
// reset their arguments' .grad().
#pragma once
#include "support/log_capture.h"
#include "training/training_support.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>

#include <sstream>
#include <utility>

namespace jitc::testing {

// An embedding with max_norm renormalizes its weight in place under a NoGradGuard, then looks it up in
// grad mode: its only parameter is first read with grad off (the projection after it is a buffer). The
// call must still be a training call (before the fix it compiled for inference, and the loss had no
// gradient).
struct RenormedEmbedding : torch::nn::Module {
  torch::nn::Embedding embedding{nullptr};
  at::Tensor projection;
  explicit RenormedEmbedding(at::Device device) {
    embedding = register_module("embedding", torch::nn::Embedding(torch::nn::EmbeddingOptions(12, 5).max_norm(1.0)));
    projection = register_buffer("projection", at::randn({5, 3}));
    to(device, at::kDouble);
  }
  at::Tensor forward(const at::Tensor& tokens) { return at::matmul(embedding(tokens).sum(1), projection); }
};

inline void check_parameter_first_read_without_grad(at::Device device, const jitc::Options& options = {}) {
  at::manual_seed(6);
  auto data = [device] {
    return std::make_pair(at::randint(12, {4, 3}, at::TensorOptions(device).dtype(at::kLong)),
                          at::randn({4, 3}, at::TensorOptions(device).dtype(at::kDouble)));
  };
  auto loss_of = [](RenormedEmbedding& m, const at::Tensor& tokens, const at::Tensor& target) {
    return at::mse_loss(m.forward(tokens), target);
  };
  auto model = std::make_shared<RenormedEmbedding>(device);
  auto compiled =
      jitc::compile([&](const at::Tensor& tokens, const at::Tensor& target) { return loss_of(*model, tokens, target); }, options);
  const auto [tokens, target] = data();
  CHECK(compiled(tokens, target).requires_grad());
  train_side_by_side(std::make_shared<RenormedEmbedding>(device), std::make_shared<RenormedEmbedding>(device), data, loss_of, 4, 1e-9);
}

// A call made under NoGradGuard whose callable turns grad mode back on (at::AutoGradMode) computes
// results that require grad in eager. An inference trace cannot give them a gradient: the function runs
// eagerly, with eager's results and gradients (before the fix an argument's case returned a result
// without one).
inline void check_grad_mode_turned_on_inside(at::Device device, const jitc::Options& options = {}) {
  at::manual_seed(8);
  const auto f64 = at::TensorOptions(device).dtype(at::kDouble);
  const at::Tensor w = at::randn({4}, f64);  // only the argument requires grad
  auto body = [&](const at::Tensor& x) {
    at::AutoGradMode enable(true);
    return (x * x * w).sum();
  };
  auto compiled = jitc::compile(body, options);
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call);
    const at::Tensor x = at::randn({4}, f64).requires_grad_(true);
    at::Tensor want, got;
    {
      at::NoGradGuard no_grad;
      want = body(x);
      got = compiled(x);
    }
    REQUIRE(got.requires_grad() == want.requires_grad());
    CHECK(at::allclose(got, want, 1e-12, 1e-12));
    const auto grads = torch::autograd::grad({got}, {x}), eager_grads = torch::autograd::grad({want}, {x});
    CHECK(at::allclose(grads[0], eager_grads[0], 1e-12, 1e-12));
  }
}

// Outputs that are views of values computed inside the call ((x * 2).t(), a slice of a product), written
// in place by the caller afterwards: eager allows it, and autograd forbids it on a view a custom Function
// returned, so the compiled function returns the buffer and takes the view after it. Where the write
// changes a value the backward needs (exp's result), the backward raises as eager's does.
inline void check_view_outputs_written_after_the_call(at::Device device, const jitc::Options& options = {}) {
  at::manual_seed(9);
  const auto f64 = at::TensorOptions(device).dtype(at::kDouble);
  auto transposed = [](const at::Tensor& x, const at::Tensor&) { return (x * 2).t(); };
  auto sliced = [](const at::Tensor& x, const at::Tensor& y) { return (x.exp() * y).narrow(1, 1, 2); };
  for (const auto& body : {std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>(transposed), {sliced}}) {
    auto compiled = jitc::compile(body, options);
    for (int call = 0; call < 3; ++call) {
      INFO("call " << call);
      const at::Tensor x = at::randn({3, 4}, f64).requires_grad_(true), y = at::randn({3, 4}, f64);
      const at::Tensor x_eager = x.detach().clone().requires_grad_(true);
      at::Tensor got = compiled(x, y), want = body(x_eager, y);
      got.mul_(3).add_(1);
      want.mul_(3).add_(1);
      (got * got).sum().backward();
      (want * want).sum().backward();
      CHECK(at::allclose(got, want, 1e-12, 1e-12));
      CHECK(at::allclose(x.grad(), x_eager.grad(), 1e-12, 1e-12));
    }
    CHECK(compiled.stats().compiles == 1);
  }
  auto saved_result = [](const at::Tensor& x) { return x.exp().t(); };
  auto compiled = jitc::compile(saved_result, options);
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call);
    const at::Tensor x = at::randn({3, 4}, f64).requires_grad_(true);
    at::Tensor got = compiled(x), want = saved_result(x);
    got.mul_(2);
    want.mul_(2);
    CHECK_THROWS_WITH(want.sum().backward(), Catch::Contains("modified by an inplace operation"));
    CHECK_THROWS_WITH(got.sum().backward(), Catch::Contains("modified by an inplace operation"));
  }
}

// Two Linear layers on `device` with the same weights: one for eager, one for the compiled function.
inline std::pair<torch::nn::Linear, torch::nn::Linear> twin_linears(int64_t in, int64_t out, at::Device device) {
  torch::nn::Linear first(in, out), second(in, out);
  first->to(device);
  second->to(device);
  at::NoGradGuard no_grad;
  second->weight.copy_(first->weight);
  second->bias.copy_(first->bias);
  return {first, second};
}

// torch::optim's optimizers create their state on the first step and keep it (momentum and moment
// buffers) in C++: a compiled step's trace made them from stand-ins, and every later step failed on them
// ("called on a tensor created while jitc traced"). The trace is now that call's execution, the function
// runs eagerly from then on, and the kept buffers become the tensors the trace computed: every step
// equals eager's, also when the optimizer is later stepped outside the compiled function, and its state
// serializes.
template <class Optimizer, class Options>
void check_compiled_optimizer_step(const char* name, const Options& options, at::Device device, const jitc::Options& compile_options) {
  INFO(name);
  at::manual_seed(10);
  auto [eager_model, model] = twin_linears(4, 2, device);
  Optimizer eager_optimizer(eager_model->parameters(), options), optimizer(model->parameters(), options);
  auto step = jitc::compile([&] { optimizer.step(); }, compile_options);
  for (int call = 0; call < 5; ++call) {
    INFO("step " << call);
    const at::Tensor x = at::randn({8, 4}, at::TensorOptions(device));
    eager_optimizer.zero_grad();
    optimizer.zero_grad();
    eager_model(x).pow(2).sum().backward();
    model(x).pow(2).sum().backward();
    eager_optimizer.step();
    step();
    CHECK(at::equal(model->weight, eager_model->weight));
    CHECK(at::equal(model->bias, eager_model->bias));
  }
  eager_optimizer.step();
  optimizer.step();
  CHECK(at::equal(model->weight, eager_model->weight));
  std::ostringstream checkpoint;  // the state's tensors have memory of their own: it serializes
  CHECK_NOTHROW(torch::save(optimizer, checkpoint));
  CHECK(checkpoint.str().size() > 0);
}

inline void check_compiled_torch_optim_steps(at::Device device, const jitc::Options& options = {}) {
  LogCapture logs;
  check_compiled_optimizer_step<torch::optim::SGD>("SGD", torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01),
                                                   device, options);
  check_compiled_optimizer_step<torch::optim::Adam>("Adam", torch::optim::AdamOptions(0.01).amsgrad(true).weight_decay(0.01), device,
                                                    options);
  check_compiled_optimizer_step<torch::optim::AdamW>("AdamW", torch::optim::AdamWOptions(0.01), device, options);
  check_compiled_optimizer_step<torch::optim::RMSprop>("RMSprop", torch::optim::RMSpropOptions(0.01).momentum(0.5).centered(true), device,
                                                       options);
  check_compiled_optimizer_step<torch::optim::Adagrad>("Adagrad", torch::optim::AdagradOptions(0.1).lr_decay(0.5), device, options);
  CHECK(logs.contains("keeps tensors it computed beyond the call"));
}

// The four checks above in the modes other than the default (reduce-overhead and max-autotune share the
// CUDA-graph path; their eager fallbacks and kept tensors must behave as the default mode's).
// A step written over argument lists that reads each parameter's .grad() (autograd's field, not an op).
// Before session 43 the stand-ins had no gradient and `if (p.grad().defined())` compiled a step that
// skipped every update; then such steps ran eagerly. Now the first trace meets the read and the engine
// traces again with the arguments' gradients as leaves of their own (runtime/argument_grads.h): the step
// compiles, called in grad mode or under a NoGradGuard, with eager's parameters and gradients call after
// call: gradients accumulated in place between calls, zeroed in place inside the step (the caller's
// gradients see it), one reset to none between calls (another argument structure: compiled again).
inline void check_step_reading_argument_grads(at::Device device, const jitc::Options& options = {}) {
  auto step = [](const std::vector<at::Tensor>& params) {
    at::NoGradGuard no_grad;
    for (const auto& p : params)
      if (p.grad().defined()) {
        p.sub_(p.grad() * 0.1);
        p.grad().zero_();
      }
  };
  for (const bool outer_no_grad : {false, true}) {
    INFO((outer_no_grad ? "called under a NoGradGuard" : "called in grad mode"));
    LogCapture logs;
    auto compiled = jitc::compile(step, options);
    std::vector<at::Tensor> params{at::randn({4, 3}, device).requires_grad_(), at::randn({3}, device).requires_grad_()}, eager;
    for (const auto& p : params) eager.push_back(p.detach().clone().requires_grad_());
    for (int call = 0; call < 5; ++call) {
      INFO("call " << call);
      (params[0].sum() * 2 + params[1].pow(2).sum()).backward();
      (eager[0].sum() * 2 + eager[1].pow(2).sum()).backward();
      if (call == 3) params[1].mutable_grad() = at::Tensor(), eager[1].mutable_grad() = at::Tensor();
      if (outer_no_grad) {
        at::NoGradGuard no_grad;
        compiled(params);
      } else {
        compiled(params);
      }
      step(eager);
      for (size_t k = 0; k < params.size(); ++k) {
        CHECK(at::equal(params[k], eager[k]));
        REQUIRE(params[k].grad().defined() == eager[k].grad().defined());
        if (eager[k].grad().defined()) CHECK(at::equal(params[k].grad(), eager[k].grad()));
      }
    }
    CHECK(compiled.stats().compiles == 2);  // both gradients, then the first one alone
    CHECK(compiled.stats().hits == 3);
    CHECK(compiled.stats().eager_fallbacks == 0);
    CHECK(!logs.contains("runs eagerly"));
  }
}

// Replacing or resetting an argument's or a captured parameter's gradient inside the callable changes the
// caller's tensor's field, which a compiled replay would not: the call runs eagerly, with the reason.
inline void check_step_resetting_argument_grads(at::Device device, const jitc::Options& options = {}) {
  auto step = [](const std::vector<at::Tensor>& params) {
    at::NoGradGuard no_grad;
    for (const auto& p : params)
      if (p.grad().defined()) {
        p.sub_(p.grad() * 0.1);
        p.mutable_grad() = at::Tensor();
      }
  };
  LogCapture logs;
  auto compiled = jitc::compile(step, options);
  std::vector<at::Tensor> params{at::randn({4, 3}, device).requires_grad_()}, eager{params[0].detach().clone().requires_grad_()};
  for (int call = 0; call < 3; ++call) {
    params[0].sum().backward();
    eager[0].sum().backward();
    compiled(params);
    step(eager);
    CHECK(at::equal(params[0], eager[0]));
    CHECK(!params[0].grad().defined());
  }
  CHECK(logs.contains("replaces or resets args[0][0].grad()"));
  CHECK(compiled.stats().programs_compiled == 0);
  // The same through captured parameters: a module's zero_grad sets their gradients to none (before the
  // fix the reset happened in the trace only, and compiled calls left the gradients defined).
  auto [layer, eager_layer] = twin_linears(4, 3, device);
  auto sgd = [](torch::nn::Linear& l) {
    at::NoGradGuard no_grad;
    for (auto& p : l->parameters()) p.sub_(p.grad() * 0.1);
    l->zero_grad();
  };
  auto compiled_sgd = jitc::compile([&] { sgd(layer); }, options);
  const at::Tensor x = at::randn({5, 4}, device);
  for (int call = 0; call < 3; ++call) {
    layer(x).sum().backward();
    eager_layer(x).sum().backward();
    compiled_sgd();
    sgd(eager_layer);
    CHECK(at::equal(layer->weight, eager_layer->weight));
    CHECK(!layer->weight.grad().defined());
    CHECK(!layer->bias.grad().defined());
  }
  CHECK(logs.contains("replaces or resets captured["));
  CHECK(compiled_sgd.stats().programs_compiled == 0);
}

// A whole training step compiled: zero_grad, forward, the loss's backward and a torch::optim step inside
// the callable, the first thing a torch.compile user tries. Before session 47 its first call traced, failed
// (its backward created the gradients) and ran again: the trace's optimizer state (stand-ins) made every
// later step throw ("called on a tensor created while jitc traced"), and Adagrad and Adam counted that step
// twice. With the optimizer's state made before (a warm start, a checkpoint), Adam's and Adagrad's steps
// compiled with their step counts frozen at the trace, and parameters drifted from eager's without an
// error. Now that first call is its trace's execution, and an entry whose graph changes between two calls
// (a step count read in C++) runs eagerly, said once.
// `compiles`: with gradients zeroed in place the step's graph is the same from its second call on (RMSprop
// reads no step count, and writes no parameter through .data() as SGD does), so it runs compiled.
template <class Optimizer, class Options>
void check_whole_training_step(const char* name, const Options& options, at::Device device, const jitc::Options& compile_options,
                               bool compiles = false) {
  for (const bool warm : {false, true})
    for (const bool set_to_none : {false, true}) {
      INFO(name << (warm ? ", state made by an eager step" : ", first step compiled")
                << (set_to_none ? ", gradients set to none" : ", gradients zeroed"));
      at::manual_seed(3);
      auto [eager_model, model] = twin_linears(4, 2, device);
      Optimizer eager_optimizer(eager_model->parameters(), options), optimizer(model->parameters(), options);
      auto step = [set_to_none](torch::nn::Linear& layer, Optimizer& optimizer, const at::Tensor& x) {
        optimizer.zero_grad(set_to_none);
        at::Tensor loss = layer(x).tanh().pow(2).mean();
        loss.backward();
        optimizer.step();
        return loss.detach();
      };
      auto compiled = jitc::compile([&](const at::Tensor& x) { return step(model, optimizer, x); }, compile_options);
      for (int call = 0; call < 6; ++call) {
        INFO("step " << call);
        const at::Tensor x = at::randn({8, 4}, at::TensorOptions(device));
        const at::Tensor expected = step(eager_model, eager_optimizer, x);
        const at::Tensor loss = warm && call == 0 ? step(model, optimizer, x) : compiled(x);
        CHECK(at::allclose(loss, expected, 1e-5, 1e-6));
        CHECK(at::allclose(model->weight, eager_model->weight, 1e-5, 1e-6));
        CHECK(at::allclose(model->bias, eager_model->bias, 1e-5, 1e-6));
      }
      if (compiles && !set_to_none) CHECK(compiled.stats().hits >= 3);
    }
}

inline void check_whole_training_steps(at::Device device, const jitc::Options& options = {}) {
  LogCapture logs;
  check_whole_training_step<torch::optim::SGD>("SGD", torch::optim::SGDOptions(0.1), device, options);
  check_whole_training_step<torch::optim::SGD>("SGD", torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01), device,
                                               options);
  check_whole_training_step<torch::optim::Adam>("Adam", torch::optim::AdamOptions(0.01).amsgrad(true).weight_decay(0.01), device, options);
  check_whole_training_step<torch::optim::AdamW>("AdamW", torch::optim::AdamWOptions(0.01), device, options);
  check_whole_training_step<torch::optim::RMSprop>("RMSprop", torch::optim::RMSpropOptions(0.01).momentum(0.5).centered(true), device,
                                                   options, /*compiles=*/true);
  check_whole_training_step<torch::optim::Adagrad>("Adagrad", torch::optim::AdagradOptions(0.1).lr_decay(0.5), device, options);
  CHECK(logs.contains("its graph changed between two calls that pass the same guards"));
  CHECK(logs.lines_with("called on a tensor created while jitc traced").empty());
}

// A forward that counts its calls in C++ (a step counter, a log line) runs that code when a call is traced,
// and not on hits, which run kernels only (README, Semantics). A training trace is not the call's execution
// (its tensors have no autograd history): before the fix the callable ran again for the call's result,
// after an inference attempt that ran it too (3 runs on a call that traced, where eager runs 1).
struct CountingNet : torch::nn::Module {
  torch::nn::Linear fc{nullptr};
  int runs = 0;
  explicit CountingNet(at::Device device) {
    fc = register_module("fc", torch::nn::Linear(4, 3));
    to(device, at::kDouble);
  }
  at::Tensor forward(const at::Tensor& x) {
    ++runs;
    return at::tanh(fc(x)).sum();
  }
};

inline void check_forward_code_runs_once_per_call(at::Device device, const jitc::Options& options = {}) {
  at::manual_seed(12);
  auto compiled_net = std::make_shared<CountingNet>(device), eager_net = std::make_shared<CountingNet>(device);
  copy_parameters(*eager_net, *compiled_net);
  auto compiled = jitc::compile(compiled_net, options);
  const at::Tensor w = at::randn({4, 2}, at::TensorOptions(device).dtype(at::kDouble)).requires_grad_();
  int lambda_runs = 0;
  auto lambda = jitc::compile(
      [&](const at::Tensor& x) {
        ++lambda_runs;
        return at::sin(x.mm(w)).sum();
      },
      options);
  for (int call = 1; call <= 5; ++call) {
    const at::Tensor x = at::randn({call < 3 ? 2 : 3, 4}, at::TensorOptions(device).dtype(at::kDouble));
    const bool traces = call == 1 || call == 3;  // batch 2, then batch 3
    const int module_before = compiled_net->runs, lambda_before = lambda_runs;
    compiled(x).backward();
    eager_net->forward(x).backward();
    lambda(x).backward();
    INFO("call " << call);
    CHECK(compiled_net->runs - module_before == (traces ? 1 : 0));  // its parameters say at once that the trace is for training
    // A lambda's captures are seen only by a trace: its first call makes an inference attempt that meets
    // the captured `w`; every trace after that is for training at once.
    CHECK(lambda_runs - lambda_before == (call == 1 ? 2 : traces ? 1 : 0));
    CHECK(at::allclose(compiled_net->fc->weight.grad(), eager_net->fc->weight.grad(), 1e-12, 1e-12));
  }
  CHECK(compiled.stats().compiles == 2);
  CHECK(lambda.stats().compiles == 2);
}

// A training forward that updates a buffer in place (an EMA of its activations) with a decay computed in
// C++: warming up with a call count, the graph of its second call differs from its first, which no guard
// sees. Before the fix a training entry's first hit was not traced again (its trace was not the call's
// execution), and replays froze the first decay: the average drifted from eager's without an error. Now
// the function runs eagerly in grad mode from its second call; with a constant decay it keeps compiling.
struct AveragingNet : torch::nn::Module {
  torch::nn::Linear fc{nullptr};
  at::Tensor average;
  bool warms_up;
  int calls = 0;
  AveragingNet(at::Device device, bool warm_up) : warms_up(warm_up) {
    fc = register_module("fc", torch::nn::Linear(4, 3));
    average = register_buffer("average", at::zeros({3}));
    to(device, at::kDouble);
  }
  at::Tensor forward(const at::Tensor& x) {
    ++calls;
    const double decay = warms_up ? std::min(0.9, (1.0 + calls) / (10.0 + calls)) : 0.9;
    const at::Tensor h = fc(x);
    {
      at::NoGradGuard no_grad;
      average.mul_(decay).add_(h.mean(0), 1 - decay);
    }
    return at::tanh(h).sum();
  }
};

inline void check_training_state_updates(at::Device device, const jitc::Options& options = {}) {
  for (const bool warm_up : {true, false}) {
    INFO((warm_up ? "decay warming up with a C++ count" : "constant decay"));
    at::manual_seed(14);
    auto net = std::make_shared<AveragingNet>(device, warm_up), eager_net = std::make_shared<AveragingNet>(device, warm_up);
    copy_parameters(*eager_net, *net);
    auto compiled = jitc::compile(net, options);
    for (int call = 0; call < 5; ++call) {
      INFO("call " << call);
      const at::Tensor x = at::randn({5, 4}, at::TensorOptions(device).dtype(at::kDouble));
      compiled(x).backward();
      eager_net->forward(x).backward();
      if (warm_up) CHECK(net->calls == eager_net->calls);  // traced, then eager: its C++ code ran once per call
      CHECK(at::allclose(net->average, eager_net->average, 1e-12, 1e-12));
      CHECK(at::allclose(net->fc->weight.grad(), eager_net->fc->weight.grad(), 1e-12, 1e-12));
    }
    const auto stats = compiled.stats();
    CHECK(stats.first_hit_checks == 1);
    CHECK(stats.hits == (warm_up ? 0 : 3));
    CHECK(stats.eager_fallbacks == (warm_up ? 3 : 0));
  }
}

inline void check_call_semantics_in_every_mode(at::Device device) {
  for (const jitc::Mode mode : {jitc::Mode::kReduceOverhead, jitc::Mode::kMaxAutotune, jitc::Mode::kMaxAutotuneNoCudagraphs}) {
    INFO("mode " << jitc::to_string(mode));
    jitc::Options options;
    options.mode = mode;
    check_parameter_first_read_without_grad(device, options);
    check_grad_mode_turned_on_inside(device, options);
    check_view_outputs_written_after_the_call(device, options);
    check_compiled_torch_optim_steps(device, options);
    check_whole_training_steps(device, options);
    check_step_reading_argument_grads(device, options);
    check_step_resetting_argument_grads(device, options);
    check_forward_code_runs_once_per_call(device, options);
    check_training_state_updates(device, options);
  }
}

}  // namespace jitc::testing
