// Combo kernels (Inductor's combo_kernels): kernels that may run at once (independent_kernels.h) launched
// as one grid, each kernel taking its own range of the grid's blocks. An optimizer step or a gradient
// clipping over many parameters is one kernel per parameter shape; most are too small to fill an H100
// and each launch costs more than it computes. As one launch they fill the GPU together.
#pragma once
#include "inductor/cuda/codegen.h"
#include "inductor/scheduler.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace jitc::inductor {

// A combo kernel: its function, its parts (positions among the unit's kernels, in plan order), and
// where each part's blocks start (one more entry: the grid's size).
struct ComboKernel {
  std::string function;
  std::vector<size_t> parts;
  int threads = 0;
  std::vector<int64_t> first_block;
};

constexpr size_t kMaxComboParts = 16;
// A launch's parameters take at most 4 KiB: the buffers' pointers, the symbols, the tile count.
constexpr size_t kMaxComboBuffers = 384;

// Different bodies a combo holds at most: NVRTC compiles each body (parts that differ only in their
// index constants share one), so a combo of many would be a compile's slowest program; the programs
// compile at the same time.
constexpr size_t kMaxComboBodies = 2;

// A part moves at most this many values (its iteration points times its buffers, 16 MiB of floats):
// a kernel that moves more runs long enough that its own launch costs little next to it, and as a part
// it would only lengthen its combo's NVRTC compile, a compile's slowest program (GPT-2's AdamW update:
// twelve layers' parameters per kernel, combined for no faster step).
constexpr int64_t kMaxComboPartValues = int64_t{1} << 22;

// Values a kernel of constant sizes reads and writes, counting every buffer at every iteration point.
int64_t values_moved(const Kernel& kernel);

// Whether a kernel printed with `config` may be a part: one pass (not split), a constant number of
// tiles that a grid covers, at most kMaxComboPartValues values moved.
bool combo_part_candidate(const Kernel& kernel, const CudaConfig& config);

// The combos made of the runs' candidates: parts with the same threads per block, at most
// kMaxComboParts parts, kMaxComboBuffers buffers and kMaxComboBodies bodies (printed with `index32`)
// each; named after their parts' ops.
std::vector<ComboKernel> plan_combo_kernels(const std::vector<const KernelLaunch*>& kernels, const std::vector<CudaConfig>& configs,
                                            const std::vector<std::vector<size_t>>& independent_runs, bool index32);

// The combo's source, after the prelude: the parts' device functions (<function>_f<i>, one per distinct
// body: parts that differ only in their index constants share one) and their constants, then
// extern "C" __global__ void <function>(Buffers_<function> buffers, Symbols symbols, long long tiles),
// whose buffers are the parts' buffers one part after the other.
std::string emit_cuda_combo(const ComboKernel& combo, const std::vector<const KernelLaunch*>& kernels,
                            const std::vector<CudaConfig>& configs, bool index32);

}  // namespace jitc::inductor
