#include "inductor/cpu/autotune.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace jitc::inductor::cpu {

namespace {

constexpr int kRounds = 10;
constexpr double kBudgetMs = 200;  // for all candidates' rounds after the first: slow kernels get fewer rounds
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
  // Rounds over all candidates in turn, so that a burst of other work on the machine slows them alike;
  // each keeps its fastest run.
  std::vector<double> ms(candidates.size(), std::numeric_limits<double>::infinity());
  for (const CpuFunction& f : candidates) run_ms(f, args);  // touches the buffers' pages and the kernels' code
  double spent = 0;
  for (int round = 0; round < kRounds && (round == 0 || spent < kBudgetMs); ++round)
    for (size_t c = 0; c < candidates.size(); ++c) {
      const double t = run_ms(candidates[c], args);
      ms[c] = std::min(ms[c], t);
      spent += t;
    }
  return ms;
}

}  // namespace jitc::inductor::cpu
