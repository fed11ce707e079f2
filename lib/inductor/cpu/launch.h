// How a compiled CPU kernel function runs: its tiles split over the thread pool, with a status word
// for kernels with run-time checks. The backend's launches and max-autotune's timings both run this.
#pragma once
#include "inductor/backend.h"

#include <cstdint>

namespace jitc::inductor::cpu {

// A kernel function of a loaded module (codegen.h gives the ABI).
struct CpuFunction {
  using Run = void (*)(void* const* buffers, const int64_t* symbols, int64_t begin, int64_t end);
  using Tiles = int64_t (*)(const int64_t* symbols);
  Run run = nullptr;
  Tiles tiles = nullptr;
  bool checks = false;  // the kernel takes a status word after its buffers
};

// Runs every tile of `f`; false when one of its run-time checks failed (an index out of range, an
// integer division by zero).
bool run_cpu_function(const CpuFunction& f, const LaunchArgs& args);

}  // namespace jitc::inductor::cpu
