// What the tests of programs built in the background share (test_background_compile*.cpp): a callable
// whose build takes long enough to be caught mid-way, and a loop of calls until the build is done.
#pragma once
#include <ATen/ATen.h>

#include <chrono>
#include <thread>

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

}  // namespace jitc::testing
