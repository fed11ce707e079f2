#include "inductor/cpu/autotune.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace jitc::inductor::cpu {

namespace {

constexpr int kMaxRuns = 10;
constexpr double kBudgetMs = 50;   // per candidate, after its first run: a slow candidate is timed once
constexpr int64_t kNoSymbols = 0;  // LaunchArgs::symbols is never null

double run_ms(const CpuFunction& f, const LaunchArgs& args) {
  const auto start = std::chrono::steady_clock::now();
  run_cpu_function(f, args);  // a failed check on zeros (an integer division by zero) still times the kernel
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::vector<double> time_cpu_candidates(const KernelLaunch& launch, const std::vector<CpuFunction>& candidates,
                                        const TuningShapes& shapes) {
  std::vector<at::Tensor> buffers = tuning_buffers(launch, shapes);
  std::vector<void*> pointers;
  int64_t largest = 1;
  for (auto& b : buffers) {
    pointers.push_back(b.data_ptr());
    largest = std::max<int64_t>(largest, b.numel());
  }
  const LaunchArgs args{.buffers = pointers.data(),
                        .num_buffers = pointers.size(),
                        .symbols = shapes.symbols.empty() ? &kNoSymbols : shapes.symbols.data(),
                        .num_symbols = static_cast<int>(shapes.symbols.size()),
                        .largest_buffer = largest};
  std::vector<double> ms;
  for (const CpuFunction& f : candidates) {
    double spent = run_ms(f, args);  // the first run touches the buffers' pages and the kernel's code
    double best = std::numeric_limits<double>::infinity();
    for (int run = 0; run < kMaxRuns && (run == 0 || spent < kBudgetMs); ++run) {
      const double t = run_ms(f, args);
      best = std::min(best, t);
      spent += t;
    }
    ms.push_back(best);
  }
  return ms;
}

}  // namespace jitc::inductor::cpu
