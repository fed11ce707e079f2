// The backend contract: what a device's code generator provides, in four roles (tinygrad's Renderer,
// Compiler, Program and Allocator; Inductor's register_backend_for_device):
//
//   render   kernel IR (with the backend's schedule)  -> Source   (LLVM IR, CUDA C, ...)
//   compile  Source                                   -> Binary   (object code, cubins; serializable)
//   load     Binary                                   -> LoadedKernels
//   launch   LoadedKernels::launch(kernel, buffers, symbols)
//
// plus `allocate` for the buffers its kernels write. Everything a device needs lives in one folder
// (lib/inductor/cpu/, lib/inductor/cuda/, lib/inductor/null/); backend_registry.cpp lists them, one line
// each. The scheduler and the executor (runtime/program.cpp) never ask which device they serve: they read
// the Target's capabilities.
#pragma once
#include "inductor/scheduler.h"

#include <jitc/stats.h>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace jitc::inductor {

// What the scheduler, the pipeline and the executor may assume of a backend's kernels.
struct Target {
  std::string name;                               // "cpu", "cuda", "null": logs, errors, cache entries
  c10::DeviceType device = c10::DeviceType::CPU;  // the tensors its kernels read and write
  // Every buffer a kernel is given starts at a multiple of this many bytes; the executor passes a copy of
  // an input that does not (outputs are allocated aligned).
  size_t buffer_alignment = 1;
  // The executor may hand a released intermediate's memory to a later output of the same size (the
  // CUDA caching allocator already does this, stream-ordered).
  bool reuses_released_buffers = false;
  // A call that launches its kernels is named in NVTX (Nsight) as well as in LibTorch's profiler.
  bool nvtx_ranges = false;
  // The scheduler orders a pointwise kernel's loops by the strides of what it stores (loop_order.h).
  bool orders_loops_as_stored = false;
  // A pointwise kernel's inner dim shorter than this merges outer dims into it even where some access then
  // reads the merged position through a division (collapse_dims.h): short tiles cost a CUDA block each.
  int64_t divides_inner_dims_below = 0;
  // Reductions of a row over the same space that do not read each other share one loop
  // (merge_reduction_loops.h); its code generator prints a loop holding several reductions.
  bool merges_reduction_loops = false;
  // A normalization over dims that are not innermost gets a row kernel whose element loop runs over the
  // reduced dims (CPU); otherwise it is left to the generic reductions.
  bool normalization_row_kernels = false;
  // A training step's backward made symbolic over changing batch sizes is fitted from its traces with their
  // batch norms decomposed (sums divided by the integer element count) rather than calling ATen's batch-norm
  // backward. CUDA: 18-25% faster; CPU: a channels-last element divided by a count that is no longer a
  // constant costs MobileNetV2 more than it gains (benchmarks/RESULTS.md, session 39).
  bool symbolic_backward_decomposes_batch_norms = false;
  // The CompileTimes stage its compile step is counted in (llvm, nvrtc).
  double CodegenStages::*compile_stage = &CodegenStages::llvm;
};

// A run-time check of a kernel failed (an index out of range, an integer division by zero): its results
// are not eager's, and eager raises for such inputs. The engine re-runs the call through eager replay,
// which raises eager's own error. Nothing of the program has written into arguments by then: its writes
// into them are extern steps after the kernels that compute them.
struct ChecksFailed {
  std::string kernel;
};

// A kernel's schedule: the decisions its backend made for it (block size and tile, rows side by side,
// split reductions, pipelined rows, prefetch, streaming stores...) as named integers, in the order the
// backend gives them. JITC_LOGS=schedule prints it, the cached code keeps it, tests read it without
// parsing generated code.
struct Schedule {
  std::vector<std::pair<std::string, int64_t>> decisions;

  Schedule& set(const std::string& name, int64_t value);
  int64_t get(const std::string& name) const;  // 0 when not decided
  std::string text() const;                    // "threads 256, tile 4096": the decisions that are not 0
};

struct RenderOptions {
  std::string name;      // the program's, for messages and file names
  bool index32 = false;  // every tensor has fewer than 2^31 elements whatever its symbols
  bool tuning = false;   // mode=max-autotune: render every candidate schedule
  // The program is a training step's (a forward with a backward, or the backward): it runs many times, but
  // built on the call its compile delays the first step. A backend may favour a shorter compile where it
  // costs the kernels little (the CPU's kernels as functions of their sizes, kernel_parameters.h).
  bool training = false;
  // Kernels that may run at once (Plan::independent_runs), as positions among render's kernels: a
  // backend with combo kernels may launch some of them as one (LoadedKernels::groups).
  std::vector<std::vector<size_t>> independent_runs;
};

struct CompileOptions {
  std::string name;
  bool want_assembly = false;  // JITC_DEBUG_DIR
  c10::Device device{c10::kCPU};
};

// What render makes of a program's kernels on one backend. Backends extend it with what compile needs.
struct Source {
  virtual ~Source() = default;
  std::string text;                 // the whole source as printed: JITC_LOGS=output_code, JITC_DEBUG_DIR
  std::string file;                 // its file name under JITC_DEBUG_DIR ("kernels.ll", "kernels.cu")
  std::vector<Schedule> schedules;  // per kernel, as rendered
};

// A named text for people (optimized IR, assembly), written under JITC_DEBUG_DIR.
struct Artifact {
  std::string file, text;
};

// What compile makes of a Source: what load needs, as bytes that a later process reads back
// (Backend::deserialize) for the disk cache and packages.
struct Binary {
  virtual ~Binary() = default;
  virtual std::string serialize() const = 0;
  std::vector<Schedule> schedules;  // per kernel, as compiled (and tuned); the cache keeps them beside the bytes
  std::vector<Artifact> artifacts;  // not serialized
};

// The arguments of one launch.
struct LaunchArgs {
  void* const* buffers = nullptr;  // where element 0 of each kernel buffer lies, in argument order
  size_t num_buffers = 0;
  const int64_t* symbols = nullptr;  // the values of the graph's symbols (never null)
  int num_symbols = 0;
  int64_t largest_buffer = 1;  // elements of the largest buffer (how finely the work is worth splitting)
  c10::Device device{c10::kCPU};
};

// A program's kernels on one backend, compiled and loaded.
class LoadedKernels {
 public:
  virtual ~LoadedKernels() = default;
  // Runs kernel `index` (its position among the kernels given to load) on the current stream or the
  // thread pool. Throws ChecksFailed when a run-time check failed.
  virtual void launch(size_t index, const LaunchArgs& args) const = 0;
  // Kernels launched as one (combo kernels): each group's kernels, in plan order, as positions among the
  // kernels given to load. The executor allocates the outputs of a group's kernels and calls
  // launch_group, at the first kernel's step, with their buffers one kernel after the other.
  virtual const std::vector<std::vector<size_t>>& groups() const;
  virtual void launch_group(size_t group, const LaunchArgs& args) const;
};

// mode=max-autotune: the graph's value shapes at these symbol values, for timing candidate schedules.
struct TuningShapes {
  const graph::Graph* graph = nullptr;
  std::vector<int64_t> symbols;
};

// Zero-filled buffers of a kernel's values at the tuning shapes, in argument order, on its device.
std::vector<at::Tensor> tuning_buffers(const KernelLaunch& launch, const TuningShapes& shapes);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const Target& target() const = 0;
  // Why this backend cannot compile in this build or on this machine (empty: it can).
  virtual std::string unavailable() const { return ""; }
  // What its binaries depend on besides the kernels (compiler versions, architecture): cache keys.
  virtual std::string identity(const c10::Device& device) const = 0;

  // Throws jitc::CompileError naming the kernel at fault.
  virtual std::unique_ptr<Source> render(const std::vector<const KernelLaunch*>& kernels, const RenderOptions& options) const = 0;
  virtual std::unique_ptr<Binary> compile(const Source& source, const CompileOptions& options) const = 0;
  // A Binary::serialize() result back; nullptr when malformed.
  virtual std::unique_ptr<Binary> deserialize(const std::string& bytes) const = 0;
  virtual std::unique_ptr<LoadedKernels> load(const Binary& binary, const std::vector<const KernelLaunch*>& kernels,
                                              const CompileOptions& options) const = 0;
  // mode=max-autotune: times the candidates that render and compile kept and leaves the fastest in
  // `binary`, which the caller then loads again. Backends without candidates do nothing.
  virtual void tune(Binary& binary, const LoadedKernels& loaded, const std::vector<const KernelLaunch*>& kernels,
                    const TuningShapes& shapes) const {}

  // What JITC_LOGS=output_code shows of one unit: its source as rendered (`file`: Source::file) under a
  // heading, unless the backend has a text closer to what runs (the CPU's IR after optimization).
  virtual std::string output_code(const std::string& source, const std::string& file, const Binary& binary) const;

  // Memory for a value a kernel writes: `sizes` with these strides on `device`.
  virtual at::Tensor allocate(c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::ScalarType dtype, c10::Device device) const;
};

// The backend of a device type; nullptr when none generates code for it.
const Backend* backend_for(c10::DeviceType device);
// Every backend of this build, in registry order.
const std::vector<const Backend*>& backends();
// The backend called `name`; nullptr if none.
const Backend* backend_named(const std::string& name);

}  // namespace jitc::inductor
