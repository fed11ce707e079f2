// The CUDA code generator: kernel IR -> CUDA C source for NVRTC (see cuda/codegen.cpp for the mapping
// of rows, reductions and element loops onto thread blocks). lib/runtime compiles and launches it.
#pragma once
#include "inductor/backend.h"
#include "inductor/kernel_ir.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace jitc::inductor {

// How a kernel is printed and launched: threads per block (a multiple of 32, at most 1024); for tiled
// (pointwise) kernels, the elements per tile (0: the kernel's own); for reductions over outer dims, the
// rows a block takes side by side (`columns` lanes, each reducing its own row with threads/columns
// threads; 0: one row per block, reduced by all of its threads); for reductions of few long rows, the
// blocks each row is split over (0: not split; see split_count).
struct CudaConfig {
  int threads = 256;
  int64_t tile = 0;
  int columns = 0;
  int split = 0;
};

// The heuristic's choice: tiled pointwise kernels 512 threads over 4096-element tiles (128 over 1024 when
// no buffer is wider than 2 bytes); other pointwise kernels 256 threads; reduction kernels enough threads
// that a row held in registers takes about 8 per thread (32 to 1024); reductions whose rows lie side by
// side in memory (x.sum(0)) 1024 threads over 64 bytes' worth of rows (see column_width), or split over
// blocks, 256 threads over 128 bytes' worth (column_split_width).
CudaConfig default_cuda_config(const Kernel& kernel);
// A configuration as a Schedule (threads, tile, columns, split), for logs, the cache and tests.
Schedule cuda_schedule(const CudaConfig& config);
// What mode=max-autotune measures: the heuristic's choice first, then 2-3 other block (and tile) sizes.
std::vector<CudaConfig> cuda_config_candidates(const Kernel& kernel);

// extern "C" __global__ void <function>(Buffers_<function> buffers, Symbols symbols, long long tiles),
// and for a split configuration also <function>_final (same parameters; see split_count),
// where Buffers_<function> holds one pointer per kernel buffer and Symbols the values of up to 16
// symbols; launched with config.threads threads per block. index32: every buffer has fewer than 2^31
// elements, so indices fit 32-bit integers.
std::string emit_cuda(const Kernel& kernel, bool index32, CudaConfig config, const std::string& function);
// The heuristic's configuration, named as the kernel.
std::string emit_cuda(const Kernel& kernel, bool index32 = false);
// emit_cuda's functions one by one (each needs the prelude before it): separate NVRTC programs, so that
// a graph's functions compile at the same time on several threads.
struct CudaFunctionSource {
  std::string name, source;
};
std::vector<CudaFunctionSource> emit_cuda_functions(const Kernel& kernel, bool index32, CudaConfig config, const std::string& function);
// `text` with every `from` replaced by `to`: code printed under a placeholder function name, renamed.
std::string replace_all(std::string text, const std::string& from, const std::string& to);
// What a source of kernels starts with (once): helpers and the Symbols struct.
std::string cuda_prelude();

// The number of tiles (thread blocks' worth of work) of a kernel at these symbol values, printed with
// this configuration.
int64_t tile_count(const Kernel& kernel, const int64_t* symbols, const CudaConfig& config);
// tile_count's formula read from the kernel IR once (the launcher keeps it), then evaluated per launch
// without reading the IR's loop structure again or allocating.
struct TileFormula {
  std::vector<int> outer_extents;  // size expressions of the outer vars, multiplied
  int columns = 0, split = 0;      // the configuration's
  int64_t tile = 0;                // tiled pointwise kernels: elements per tile of the inner extent
  int inner_extent = -1;
};
TileFormula tile_formula(const Kernel& kernel, const CudaConfig& config);
int64_t evaluate_tiles(const Kernel& kernel, const TileFormula& formula, const int64_t* symbols);
// The product of the variables' extents when they are all constants; -1 otherwise.
int64_t constant_elements(const Kernel& kernel, const std::vector<int>& vars);
// An int64 size expression of the kernel (constants, symbols, + - *) at these symbol values.
int64_t evaluate_size(const Kernel& kernel, int expr, const int64_t* symbols);

// For a reduction kernel whose neighbouring rows are neighbours in memory and whose reduced elements are
// not (a reduction over an outer dim): how many rows a block takes side by side so that each step of its
// threads reads 64 contiguous bytes of each row it visits (8 to 32 rows). 0 for every other kernel.
int column_width(const Kernel& kernel);
// Column kernels split over blocks (see split_count) take twice column_width's rows side by side (128
// bytes' worth, at most 64 rows) with this many threads.
int column_split_width(const Kernel& kernel);
constexpr int kColumnSplitThreads = 256;

// Reductions of few long rows (x.sum(), a loss's mean) would leave most of the GPU idle with a block per
// row, so each row is split over this many blocks: <function> reduces slices of rows into a workspace
// (tiles = rows * split) and <function>_final combines each row's partial results and runs the rest of
// the row (tiles = rows), as Inductor's split reductions do. Needs a constant number of rows, reductions
// that do not read each other's results and no element loop; 0 otherwise. A reduction loop of symbolic
// size splits as if its symbols were 1024 (the slices' length follows the size at run time; arg
// reductions, whose empty slices would offer a position, do not split then). Column kernels
// (column_width) with many reduced elements split too, their blocks taking column_split_width rows side
// by side (tiles = groups of rows * split, then groups), except for variances and arg reductions.
int split_count(const Kernel& kernel);
// Variances in a split kernel: for each reduction that sums (x - m)^2 where m = (sum of x) / n is another
// reduction's mean over a loop of the same shape and n that loop's element count, constant or symbolic
// (lower_reduction's two-pass variance), that sum's reduction. The split passes compute both with
// Welford's update instead (a second loop would need the row's mean, which no slice has), combining
// (count, mean, M2) across threads and slices (Chan et al.).
std::map<int, int> welford_pairs(const Kernel& kernel);

// The int64 slots of a split kernel's workspace (the last entry of its Buffers): a partial value and a
// position per reduction, row and slice.
int64_t split_workspace_slots(const Kernel& kernel, const CudaConfig& config);

// A launch takes at most this many blocks. A function whose tile count may exceed it loops over tiles
// (grid-stride); one whose constant sizes keep it below takes one tile per block.
constexpr int64_t kMaxGridBlocks = int64_t{1} << 20;

// Rows at most this many elements long are reduced in registers (persistent reductions).
constexpr int kMaxItemsPerThread = 16;
// A vector group's element body is printed once per element of the group (unrolled), and once per group
// where a thread takes several at once: a pointwise kernel takes narrower groups, down to two elements,
// and one group at a time, when its body times the elements unrolled would exceed this many
// expressions. NVRTC's time grows with the unrolled code (a horizontally fused update of seven parameters,
// 173 expressions eight wide, was a compile's slowest program), and a body that long has many loads in
// flight already.
constexpr int64_t kMaxUnrolledGroupExprs = 512;
constexpr int kCudaMaxThreads = 1024;

}  // namespace jitc::inductor
