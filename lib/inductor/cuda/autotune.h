// mode=max-autotune for CUDA kernels: each kernel is printed in 2-4 launch configurations (block sizes,
// inductor::cuda_config_candidates), all compiled in the program's one NVRTC source; each candidate is
// timed on buffers of the graph's shapes and the fastest is kept with the program, so the compile cache
// stores the winner and a warm start does not measure again (Inductor's max-autotune does the same with
// its Triton configs).
#pragma once
#include "graph/graph.h"
#include "inductor/cuda/codegen.h"
#include "inductor/backend.h"

#include <cstdint>
#include <vector>

namespace jitc::inductor::cuda {

// Milliseconds per launch of each of `functions` (one per candidate, printed and launched with
// `configs[i]`) for kernel `launch`, timed with CUDA events on zero-filled buffers.
std::vector<double> time_candidates(const inductor::KernelLaunch& launch, const std::vector<void*>& functions,
                                    const std::vector<inductor::CudaConfig>& configs, const inductor::TuningShapes& shapes);

}  // namespace jitc::inductor::cuda
