// What the tests of programs built in the background share (test_background_compile*.cpp): a callable
// whose build takes long enough to be caught mid-way, and a loop of calls until the build is done.
#pragma once
#include "support/parity.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <vector>

namespace jitc::testing {

// Enough kernels that a build takes LLVM (or NVRTC) tens of milliseconds.
inline at::Tensor layers(const at::Tensor& x, const at::Tensor& w) {
  at::Tensor y = x;
  for (int k = 0; k < 6; ++k) y = at::softmax(at::mm(at::tanh(y * (k + 1)) + y.sin(), w), -1) + y.exp().sum(-1, true) * 1e-3;
  return y;
}

// Calls `check` (which calls f and compares with eager) until f's program is built, at most 120 s; the
// number of calls made meanwhile.
template <class F, class Check>
int calls_until_built(F& f, Check check) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int calls = 0;
  while (f.stats().programs_compiled == 0 && std::chrono::steady_clock::now() < deadline) {
    check();
    ++calls;
    // A serving process's gaps between calls: the build, at the lowest priority, gets the cores then.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return calls;
}

// Training steps of a two-layer network on `device` while its forward and backward programs build in the
// background (the steps replayed eagerly), then compiled steps: every step's loss and gradients against
// eager's, and no eager fallback.
inline void check_training_steps_while_building(c10::Device device) {
  const auto w1 = (at::randn({16, 32}, device) * 0.2).requires_grad_(), w2 = (at::randn({32, 8}, device) * 0.2).requires_grad_();
  auto loss_of = [&](const at::Tensor& x) { return at::tanh(at::mm(at::relu(at::mm(x, w1)) * 2, w2)).pow(2).mean(); };
  auto compiled = jitc::compile(loss_of);
  auto step = [&](auto& f, const at::Tensor& x) {
    w1.mutable_grad() = at::Tensor();
    w2.mutable_grad() = at::Tensor();
    const at::Tensor loss = f(x);
    loss.backward();
    return std::vector<at::Tensor>{loss.detach(), w1.grad().clone(), w2.grad().clone()};
  };
  const auto x = at::randn({64, 16}, device);
  auto compare = [&] {
    const auto got = step(compiled, x), want = step(loss_of, x);
    for (size_t k = 0; k < got.size(); ++k) CHECK(difference(got[k], want[k], reduction_tolerance(at::kFloat, 64)) == "");
  };
  compare();  // traced: the builds start
  calls_until_built(compiled, compare);
  REQUIRE(compiled.stats().programs_compiled >= 1);
  compare();  // compiled forward and backward
  CHECK(compiled.stats().eager_fallbacks == 0);
}

}  // namespace jitc::testing
