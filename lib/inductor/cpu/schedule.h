// The CPU scheduling step: what a kernel's LLVM IR does beyond its plain loop nest, decided from the
// kernel IR before anything is printed (cpu/schedule.cpp holds each strategy's rule and the measurements
// behind it; the printer's files print what it decided). The decisions are a value: the printer reads
// them, JITC_LOGS=schedule and the disk cache show them as a Schedule, tests read them without parsing IR.
#pragma once
#include "inductor/backend.h"
#include "inductor/kernel_ir.h"
#include "inductor/placement.h"

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace jitc::inductor::llvm_ir {

// A pass is the loop the printer is in: the body index of the reduction whose loop it prints, or this
// for the element loop.
constexpr int kElementPass = 1 << 30;
// A reduction loop's index (0, 1, ...), or this for the element loop.
constexpr int kElementLoop = -2;
// Positions of a chunked sum's chunk.
constexpr int64_t kSumChunk = 1024;
// Staged stores stream where a call stores at least this many bytes; below, its output may still be in
// cache for the next op (cpu/codegen_streaming.cpp).
constexpr int64_t kStreamingBytes = 8 << 20;

// An expensive value a row's later loops read from a row-sized stack array instead of computing it
// again: the array's number and the pass that computes and stores it.
struct RowCacheArray {
  int array;
  int first_pass;
  c10::ScalarType dtype;
};

// A load of the row's first loop that is prefetched for the next row: buffer, index expression, and the
// elements between two rows.
struct RowPrefetch {
  int buffer;
  int index;
  int64_t row_step;
};

// A store of the element loop staged in a stack array and copied out with streaming stores: buffer,
// index expression, stage array, and the array's elements (a row, or a tile).
struct StagedStore {
  int buffer;
  int index;
  int array;
  int64_t elements;
};

struct CpuSchedule {
  // Rows side by side (reductions over outer dims, cpu/codegen_columns.cpp): rows per block, 0 for one
  // row per tile; `guarded`: the block fits the last outer dim only for some symbol values, tested at run
  // time; per expression, whether it is a row value a later loop reads (kept in a per-lane array).
  int lanes = 0;
  bool guarded = false;
  std::vector<bool> kept_row_values;
  // Lane loops left rolled (a parameterized kernel's, cpu/kernel_parameters.h): LLVM's loop vectorizer
  // makes them a few vector steps, where fully unrolled they cost LLVM several times the time.
  bool rolled_lanes = false;

  // Row cache (cpu/codegen.cpp): the row's constant elements, the positional key of each expression and
  // the arrays by key.
  int64_t row_elements = 0;
  std::vector<int> keys;
  std::unordered_map<int, RowCacheArray> row_cache;

  // Pipelined rows (cpu/codegen_pipeline.cpp): the first loop's reductions carried over from the
  // previous row.
  std::vector<int> pipelined;

  // Prefetch of the next row (cpu/codegen_prefetch.cpp): the loads, the loop that prefetches them (-1:
  // none, kElementLoop, or a reduction loop), the first loop's variable and its constant extent.
  std::vector<RowPrefetch> prefetch;
  int prefetch_loop = -1;
  int prefetch_first_var = -1;
  int64_t prefetch_row_elements = 0;

  // Streaming stores of large outputs (cpu/codegen_streaming.cpp).
  std::vector<StagedStore> staged;

  // Values of the inner position only (a channels-last batch norm's per-channel scale and shift, which a
  // pointwise kernel's inner loop over the channels would compute again for every pixel), computed once
  // per call into arrays of `positions` elements that the element loop reads (cpu/codegen_positions.cpp):
  // the expressions, by body index.
  std::vector<int> position_values;
  int64_t positions = 0;

  // sin and cos of floats in the element loop through sincos_float (cpu/codegen_trig.cpp).
  bool fast_sin_cos = false;

  // Float sums over a long innermost loop variable added up in chunks of kSumChunk of its positions,
  // each chunk's sum then added to the total (cpu/codegen.cpp): the reductions, by body index.
  std::vector<int> chunked_sums;

  // As named integers, for logs, the cache and tests.
  Schedule decisions(const Kernel& kernel) const;
};

// What the scheduling step may use. The defaults are the heuristic: every strategy where its rule (and
// the sizes measured on the developer host) says it pays. mode=max-autotune also schedules variants with
// one strategy off, another block of rows side by side, or the size limits lifted, and times them
// (cpu/autotune.h): the limits were measured on one machine.
struct CpuStrategies {
  int block_bytes = 256;  // rows side by side: bytes of the narrowest loaded element per block; 0: none
  bool row_cache = true;
  bool pipelined_rows = true;
  bool prefetch = true;
  bool streaming_stores = true;
  bool position_values = true;
  bool size_limits = true;  // the minimum row sizes below which pipelining, prefetch and staging are not used
};

CpuSchedule schedule_cpu_kernel(const Kernel& kernel, const Placement& placement, const CpuStrategies& use = {});

// mode=max-autotune: the heuristic's schedule first, then the distinct schedules of its variants (as
// named decisions: variants that decide the same are one candidate). Chunked sums and fast sin/cos are
// kept as the heuristic decides them: they change results, not only speed.
std::vector<CpuSchedule> cpu_schedule_candidates(const Kernel& kernel, const Placement& placement);

// Float max/min reductions track NaN in a flag of their own (maxnum ignores NaN; ATen's max keeps it).
bool needs_nan_flag(const Kernel& kernel, int reduction);

}  // namespace jitc::inductor::llvm_ir
