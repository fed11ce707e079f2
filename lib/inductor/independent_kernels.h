// Kernels that may run in any order, or at once: what a backend may launch as one combo kernel
// (Inductor's combo kernels; the CUDA backend, cuda/combos.h). An optimizer step over many parameters is
// one kernel per parameter shape, each too small to fill a GPU, with nothing between them.
#pragma once
#include "graph/graph.h"
#include "inductor/scheduler.h"

#include <cstddef>
#include <vector>

namespace jitc::inductor {

// Runs of the plan's kernel steps with only releases between them, in which no kernel writes memory that
// another kernel of the run reads or writes (storages compared, so views and updates stored in an input's
// memory count), and none has run-time checks. Each run holds at least two kernels, as indices into
// plan.kernels in step order. A kernel that conflicts with the run so far starts the next run.
std::vector<std::vector<size_t>> independent_kernel_runs(const Plan& plan, const graph::Graph& g);

}  // namespace jitc::inductor
