// torch::nn modules as LibTorch code holds them, passed to jitc::compile as they are, and the module state a
// compiled forward depends on (training flags, registered tensors). Every result is compared with eager.
#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <catch2/catch.hpp>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/rnn.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/loss.h>
#include <torch/nn/modules/normalization.h>

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

bool close(const at::Tensor& a, const at::Tensor& b) { return at::allclose(a, b, 1e-5, 1e-6); }

struct Net : torch::nn::Module {
  Net() : fc(register_module("fc", torch::nn::Linear(4, 3))) {}
  at::Tensor forward(const at::Tensor& x) { return at::relu(fc->forward(x)) * 2; }
  torch::nn::Linear fc;
};

struct Scaled : torch::nn::Module {
  Scaled() : fc(register_module("fc", torch::nn::Linear(4, 3))) {}
  at::Tensor forward(const at::Tensor& x, double scale, int64_t shift, bool negate) {
    auto y = fc->forward(x) * scale + shift;
    return negate ? -y : y;
  }
  torch::nn::Linear fc;
};

struct TwoHeads : torch::nn::Module {
  TwoHeads() : a(register_module("a", torch::nn::Linear(4, 2))), b(register_module("b", torch::nn::Linear(4, 5))) {}
  std::pair<at::Tensor, at::Tensor> forward(const at::Tensor& x) { return {a->forward(x), b->forward(x).tanh()}; }
  torch::nn::Linear a, b;
};

struct Output {
  at::Tensor logits;
  std::tuple<at::Tensor, at::Tensor> state;
  int64_t steps = 0;
};

}  // namespace

template <>
struct jitc::Fields<Output> {
  static constexpr auto members = std::make_tuple(&Output::logits, &Output::state, &Output::steps);
};

namespace {

struct Recurrent : torch::nn::Module {
  Recurrent() : cell(register_module("cell", torch::nn::Linear(4, 4))) {}
  Output forward(const at::Tensor& x, std::tuple<at::Tensor, at::Tensor> state) {
    auto h = at::tanh(cell->forward(x) + std::get<0>(state));
    return {h.sum(1), {h, std::get<1>(state) + h}, 3};
  }
  torch::nn::Linear cell;
};

struct DropNet : torch::nn::Module {
  DropNet()
      : fc(register_module("fc", torch::nn::Linear(8, 8))),
        drop(register_module("drop", torch::nn::Dropout(0.5))),
        bn(register_module("bn", torch::nn::BatchNorm1d(8))) {}
  at::Tensor forward(const at::Tensor& x) { return bn->forward(drop->forward(fc->forward(x))); }
  torch::nn::Linear fc;
  torch::nn::Dropout drop;
  torch::nn::BatchNorm1d bn;
};

// A forward that reads its LibTorch modules' options as C++ values: a dropout's p, a batch norm's momentum and
// eps, a leaky ReLU's slope, a layer norm's eps (its options hold a vector: guarded field by field), a loss's
// label smoothing.
struct OptionsNet : torch::nn::Module {
  OptionsNet()
      : fc(register_module("fc", torch::nn::Linear(8, 8))),
        drop(register_module("drop", torch::nn::Dropout(0.3))),
        bn(register_module("bn", torch::nn::BatchNorm1d(8))),
        leaky(register_module("leaky", torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.1)))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({8})))),
        loss(register_module("loss", torch::nn::CrossEntropyLoss())) {}
  at::Tensor forward(const at::Tensor& x, const at::Tensor& target) {
    return loss->forward(norm->forward(leaky->forward(bn->forward(drop->forward(fc->forward(x))))), target);
  }
  torch::nn::Linear fc;
  torch::nn::Dropout drop;
  torch::nn::BatchNorm1d bn;
  torch::nn::LeakyReLU leaky;
  torch::nn::LayerNorm norm;
  torch::nn::CrossEntropyLoss loss;
};

// Replaces its registered parameter the way a module of one's own can (parameters_ is protected).
struct Swappable : torch::nn::Module {
  Swappable() { w = register_parameter("w", at::ones({3}), false); }
  at::Tensor forward(const at::Tensor& x) { return x * w; }
  void swap_in(const at::Tensor& t) { w = parameters_["w"] = t; }
  at::Tensor w;
};

// Two calls: the first traces, the second replays the compiled program.
template <class F, class E>
void twice_equal(F& f, E eager, const at::Tensor& x) {
  for (int i = 0; i < 2; ++i) CHECK(close(f(x), eager(x)));
}

}  // namespace

TEST_CASE("torch::nn::Sequential compiles as it is (template forward, tensor in and out)", "[modules]") {
  at::NoGradGuard no_grad;
  torch::nn::Sequential seq(torch::nn::Linear(4, 8), torch::nn::ReLU(), torch::nn::Linear(8, 2));
  auto f = jitc::compile(seq);
  twice_equal(f, [&](const at::Tensor& x) { return seq->forward(x); }, at::randn({3, 4}));
  CHECK(f.stats().hits == 1);
  auto g = jitc::compile<at::Tensor(const at::Tensor&)>(seq);
  twice_equal(g, [&](const at::Tensor& x) { return seq->forward(x); }, at::randn({3, 4}));
}

TEST_CASE("torch::nn::AnyModule compiles as it is", "[modules]") {
  at::NoGradGuard no_grad;
  torch::nn::AnyModule any(torch::nn::Linear(4, 3));
  auto f = jitc::compile(any);
  twice_equal(f, [&](const at::Tensor& x) { return any.forward(x); }, at::randn({2, 4}));
}

TEST_CASE("modules passed by value: a ModuleHolder, a Module object, a temporary", "[modules]") {
  at::NoGradGuard no_grad;
  torch::nn::Linear lin(4, 3);
  auto f = jitc::compile(lin);
  twice_equal(f, [&](const at::Tensor& x) { return lin->forward(x); }, at::randn({2, 4}));

  Net net;
  auto g = jitc::compile(net);  // referenced: a later change to `net` is seen
  twice_equal(g, [&](const at::Tensor& x) { return net.forward(x); }, at::randn({2, 4}));
  {
    at::NoGradGuard inner;
    net.fc->weight.mul_(-1);
  }
  const auto x = at::randn({2, 4});
  CHECK(close(g(x), net.forward(x)));

  auto h = jitc::compile(Net());  // moved in
  const auto y = at::randn({2, 4});
  CHECK(h(y).sizes() == at::IntArrayRef({2, 3}));
  CHECK(close(h(y), h(y)));
}

TEST_CASE("a module whose forward takes double, int64_t and bool arguments", "[modules]") {
  at::NoGradGuard no_grad;
  auto m = std::make_shared<Scaled>();
  auto f = jitc::compile(m);
  const auto x = at::randn({2, 4});
  for (int i = 0; i < 2; ++i) {
    CHECK(close(f(x, 0.5, 2, true), m->forward(x, 0.5, 2, true)));
    CHECK(close(f(x, 1.5, -1, false), m->forward(x, 1.5, -1, false)));
  }
}

TEST_CASE("std::pair results, from a module and from a lambda", "[modules]") {
  at::NoGradGuard no_grad;
  auto m = std::make_shared<TwoHeads>();
  auto f = jitc::compile(m);
  const auto x = at::randn({3, 4});
  for (int i = 0; i < 2; ++i) {
    auto [a, b] = f(x);
    auto [ea, eb] = m->forward(x);
    CHECK(close(a, ea));
    CHECK(close(b, eb));
  }
  auto g = jitc::compile([](const at::Tensor& x) { return std::make_pair(x + 1, x.sum()); });
  for (int i = 0; i < 2; ++i) {
    auto [s, t] = g(x);
    CHECK(at::equal(s, x + 1));
    CHECK(close(t, x.sum()));
  }
}

TEST_CASE("std::tuple arguments: LSTM state in and out", "[modules]") {
  at::NoGradGuard no_grad;
  torch::nn::LSTM lstm(torch::nn::LSTMOptions(4, 6).batch_first(true));
  auto f = jitc::compile(lstm);
  const auto x = at::randn({2, 5, 4});
  const auto h = at::randn({1, 2, 6}), c = at::randn({1, 2, 6});
  for (int i = 0; i < 2; ++i) {
    auto [out, state] = f(x, std::make_tuple(h, c));
    auto [eout, estate] = lstm->forward(x, std::make_tuple(h, c));
    CHECK(close(out, eout));
    CHECK(close(std::get<0>(state), std::get<0>(estate)));
    CHECK(close(std::get<1>(state), std::get<1>(estate)));
    auto [out0, state0] = f(x, std::nullopt);
    CHECK(close(out0, std::get<0>(lstm->forward(x))));
  }
  using State = std::tuple<at::Tensor, at::Tensor>;
  auto g = jitc::compile([](const at::Tensor& x, const State& s) { return x * std::get<0>(s) + std::get<1>(s); });
  const auto a = at::randn({3}), b = at::randn({3}), y = at::randn({3});
  for (int i = 0; i < 2; ++i) CHECK(close(g(y, {a, b}), y * a + b));
}

TEST_CASE("a struct result listed in jitc::Fields", "[modules]") {
  at::NoGradGuard no_grad;
  auto m = std::make_shared<Recurrent>();
  auto f = jitc::compile(m);
  const auto x = at::randn({2, 4});
  const auto state = std::make_tuple(at::randn({2, 4}), at::randn({2, 4}));
  for (int i = 0; i < 2; ++i) {
    const Output got = f(x, state);
    const Output want = m->forward(x, state);
    CHECK(close(got.logits, want.logits));
    CHECK(close(std::get<0>(got.state), std::get<0>(want.state)));
    CHECK(close(std::get<1>(got.state), std::get<1>(want.state)));
    CHECK(got.steps == 3);
  }
}

TEST_CASE("train() / eval() after compiling recompiles: dropout and batch norm follow eager", "[modules]") {
  at::NoGradGuard no_grad;
  auto compiled = std::make_shared<DropNet>(), eager = std::make_shared<DropNet>();
  {
    const auto params = eager->parameters();
    for (size_t k = 0; k < params.size(); ++k) params[k].copy_(compiled->parameters()[k]);
  }
  compiled->eval();
  eager->eval();
  auto f = jitc::compile(compiled);
  const auto x = at::randn({16, 8});
  auto step = [&](uint64_t seed) {
    at::manual_seed(seed);
    const auto want = eager->forward(x);
    at::manual_seed(seed);
    const auto got = f(x);
    CHECK(close(got, want));
    CHECK(close(compiled->bn->running_mean, eager->bn->running_mean));
    CHECK(close(compiled->bn->running_var, eager->bn->running_var));
  };
  step(1);
  step(2);
  compiled->train();
  eager->train();
  for (uint64_t seed = 3; seed < 6; ++seed) step(seed);  // dropout draws and running statistics as eager's
  CHECK(!at::equal(compiled->bn->running_mean, at::zeros({8})));
  compiled->eval();
  eager->eval();
  step(6);
  step(7);
  const auto s = f.stats();
  CHECK(s.compiles == 2);
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK(s.recompile_reasons[0].find("module 'self' training mismatch. expected False, actual True") != std::string::npos);
}

TEST_CASE("eval() on one submodule only is a recompile", "[modules]") {
  at::NoGradGuard no_grad;
  auto m = std::make_shared<DropNet>();
  m->eval();
  auto f = jitc::compile(m);
  const auto x = at::randn({4, 8});
  f(x);
  m->drop->train();
  at::manual_seed(9);
  const auto want = m->forward(x);
  at::manual_seed(9);
  CHECK(close(f(x), want));
  REQUIRE(f.stats().recompile_reasons.size() == 1);
  CHECK(f.stats().recompile_reasons[0].find("module 'self.drop' training mismatch") != std::string::npos);
}

TEST_CASE("re-assigning a registered parameter or buffer is seen", "[modules]") {
  at::NoGradGuard no_grad;
  torch::nn::Linear lin(4, 3);
  auto f = jitc::compile(lin);
  const auto x = at::randn({2, 4});
  f(x);
  f(x);
  lin->weight = at::randn({3, 4});  // the registration keeps the old tensor alive
  CHECK(close(f(x), lin->forward(x)));
  CHECK(close(f(x), lin->forward(x)));
  REQUIRE(f.stats().recompile_reasons.size() == 1);
  CHECK(f.stats().recompile_reasons[0].find("self.weight is referenced by its registration only") != std::string::npos);

  torch::nn::BatchNorm1d bn(3);
  bn->eval();
  auto g = jitc::compile(bn);
  const auto y = at::randn({5, 3});
  g(y);
  bn->running_mean = at::randn({3});
  CHECK(close(g(y), bn->forward(y)));
}

TEST_CASE("a registered parameter replaced in its registration is seen while the old one lives on", "[modules]") {
  at::NoGradGuard no_grad;
  auto m = std::make_shared<Swappable>();
  auto f = jitc::compile(m);
  const auto x = at::randn({3});
  f(x);
  f(x);
  const at::Tensor old = m->w;  // keeps the traced tensor alive
  m->swap_in(at::full({3}, 5.0f));
  CHECK(close(f(x), x * 5));
  REQUIRE(f.stats().recompile_reasons.size() == 1);
  CHECK(f.stats().recompile_reasons[0].find("___check_obj_id(self.w)") != std::string::npos);
}

// A batch norm in training mode outside autograd (statistics recalibrated under NoGradGuard, a model left
// in training mode while serving): its running statistics are updated in place, which the graph states as
// annotated copies, and the graph compiles (it used to run eagerly as a whole).
TEST_CASE("batch norms in training mode under NoGradGuard and InferenceMode compile and update their statistics as eager", "[modules]") {
  for (bool inference_mode : {false, true})
    for (auto dtype : {at::kFloat, at::kDouble})
      for (bool affine : {true, false}) {
        INFO("inference mode " << inference_mode << " dtype " << dtype << " affine " << affine);
        std::optional<c10::InferenceMode> inference;
        std::optional<at::NoGradGuard> no_grad;
        if (inference_mode) inference.emplace();
        else no_grad.emplace();
        auto make = [&] {
          auto seq = torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 6, 3).padding(1)),
                                           torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(6).affine(affine).momentum(0.3)),
                                           torch::nn::ReLU());
          seq->to(dtype);
          return seq;
        };
        auto compiled = make(), eager = make();
        const auto from = compiled->parameters(), to = eager->parameters();
        for (size_t k = 0; k < from.size(); ++k) to[k].copy_(from[k]);
        auto f = jitc::compile(compiled);
        for (int call = 0; call < 4; ++call) {
          const auto x = at::randn({2, 3, 8, 8}, dtype) * (call + 1);
          CHECK(close(f(x), eager->forward(x)));
          const auto a = compiled->named_buffers(), b = eager->named_buffers();
          for (const auto& item : a) CHECK(close(item.value(), b[item.key()]));
        }
        CHECK(f.stats().programs_compiled == 1);
        CHECK(f.stats().first_hit_checks == 1);  // it updates the running statistics, captured tensors
        CHECK(f.stats().hits == 2);
      }
}

// Module::to inside the callable replaces every parameter's data (Tensor::set_data, which the dispatcher
// does not see): under a trace the parameters kept the trace's stand-ins and the module failed on every
// later use, compiled or not. The trace puts them back and the function runs eagerly, with one warning
// naming the cause; the conversion itself then happens as in eager.
TEST_CASE("a callable that converts its module (Module::to) runs eagerly and leaves the module intact", "[modules]") {
  at::NoGradGuard no_grad;
  torch::nn::Linear same(4, 3), converted(4, 3);
  same->to(at::kDouble);
  auto keeps_dtype = jitc::compile([&](const at::Tensor& x) {
    same->to(x.scalar_type());
    return same(x);
  });
  auto converts = jitc::compile([&](const at::Tensor& x) {
    converted->to(at::kDouble);
    return converted(x);
  });
  for (int call = 0; call < 3; ++call) {
    INFO("call " << call);
    const at::Tensor x = at::randn({2, 4}, at::kDouble);
    const at::Tensor kept = keeps_dtype(x);
    CHECK(at::equal(kept, same(x)));
    const at::Tensor after_conversion = converts(x);  // first: eager's module is converted inside the call
    CHECK(at::equal(after_conversion, converted(x)));
  }
  CHECK(converted->weight.scalar_type() == at::kDouble);
  CHECK(keeps_dtype.stats().eager_fallbacks == 3);
  CHECK(converts.stats().eager_fallbacks == 3);
}

// Dynamo guards the attributes a module's forward reads; jitc guards the options of LibTorch's modules, which
// their forwards read as C++ values and a trace records as constants. Before, a changed option was frozen
// into the entry: a silent wrong result from the next call on.
TEST_CASE("changing a LibTorch module's options after compiling recompiles, in inference and in training", "[modules]") {
  for (bool training : {false, true}) {
    INFO("training " << training);
    std::optional<at::NoGradGuard> no_grad;
    if (!training) no_grad.emplace();
    auto compiled = std::make_shared<OptionsNet>(), eager = std::make_shared<OptionsNet>();
    compiled->to(at::kDouble);
    eager->to(at::kDouble);
    {
      at::NoGradGuard copying;
      const auto from = compiled->parameters(), to = eager->parameters();
      for (size_t k = 0; k < from.size(); ++k) to[k].copy_(from[k]);
    }
    auto f = jitc::compile<at::Tensor(const at::Tensor&, const at::Tensor&)>(compiled);
    auto step = [&](uint64_t seed) {
      const auto x = at::randn({6, 8}, at::kDouble), target = at::randint(0, 8, {6});
      compiled->zero_grad();
      eager->zero_grad();
      at::manual_seed(seed);
      const auto got = f(x, target);
      at::manual_seed(seed);
      const auto want = eager->forward(x, target);
      CHECK(at::allclose(got, want, 1e-12, 1e-12));
      CHECK(at::allclose(compiled->bn->running_mean, eager->bn->running_mean, 1e-12, 1e-12));
      if (!training) return;
      got.backward();
      want.backward();
      const auto a = compiled->parameters(), b = eager->parameters();
      for (size_t k = 0; k < a.size(); ++k) CHECK(at::allclose(a[k].grad(), b[k].grad(), 1e-12, 1e-12));
    };
    const std::vector<std::pair<std::string, std::function<void(OptionsNet&)>>> changes = {
        {"self.drop", [](OptionsNet& m) { m.drop->options.p(0.6); }},
        {"self.bn", [](OptionsNet& m) { m.bn->options.momentum(0.5); }},
        {"self.bn", [](OptionsNet& m) { m.bn->options.eps(0.25); }},
        {"self.leaky", [](OptionsNet& m) { m.leaky->options.negative_slope(0.5); }},
        {"self.norm", [](OptionsNet& m) { m.norm->options.eps(0.5); }},
        {"self.loss", [](OptionsNet& m) { m.loss->options.label_smoothing(0.2); }},
    };
    uint64_t seed = 0;
    step(++seed);
    step(++seed);
    for (const auto& [module, change] : changes) {
      INFO("changed " << module);
      change(*compiled);
      change(*eager);
      step(++seed);
      step(++seed);
    }
    const auto s = f.stats();
    CHECK(s.eager_fallbacks == 0);
    REQUIRE(s.recompile_reasons.size() == changes.size());
    for (size_t k = 0; k < changes.size(); ++k)
      CHECK(s.recompile_reasons[k].find("module '" + changes[k].first + "' options mismatch. expected torch::nn::") != std::string::npos);
  }
}
