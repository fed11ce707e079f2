// mode=max-autotune for CPU kernels: each kernel is printed in its distinct candidate schedules
// (cpu_schedule_candidates: the heuristic's, and variants with a strategy off, another block of rows
// side by side or the size limits lifted), all compiled in the program's one LLVM module; each is timed
// on buffers of the graph's shapes and the fastest is kept with the program, so the compile cache stores
// the winner and a warm start does not measure again (as for CUDA's launch configurations).
#pragma once
#include "inductor/backend.h"
#include "inductor/cpu/launch.h"

#include <vector>

namespace jitc::inductor::cpu {

// Milliseconds per run of each of `candidates` (functions of kernel `launch`), the fastest of a few
// rounds on zero-filled buffers: a CPU's timings vary from run to run by far more than a GPU's.
std::vector<double> time_cpu_candidates(const KernelLaunch& launch, const std::vector<CpuFunction>& candidates, const TuningShapes& shapes);

}  // namespace jitc::inductor::cpu
