// Program: a scheduled graph with its kernels compiled, ready to run. Steps run in order: a kernel
// launch (outputs allocated with the traced strides, tiles spread over the thread pool), an extern ATen
// call (as the eager backend runs it), or the release of an intermediate, whose memory the next output
// of the same size reuses.
//
// The compiled part (ProgramCode: plan, object code, kernel entry points) depends only on the functional
// graph's canonical text and the code generator's identity, so it is shared by every program with the
// same key, in this process and, through the disk cache, in later ones (program_cache.h).
#pragma once
#include "graph/graph.h"
#include "inductor/codegen_cuda.h"
#include "inductor/scheduler.h"

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace jitc::runtime {

class CpuModule;
struct CompileTimes;
struct TuningShapes;
class CudaModule;
struct CudaSource;

struct ProgramCode {
  using KernelFn = void (*)(void* const* buffers, const int64_t* symbols, int64_t begin, int64_t end);
  using TilesFn = int64_t (*)(const int64_t* symbols);
  struct Entry {
    KernelFn run = nullptr;      // CPU kernels
    TilesFn tiles = nullptr;
    void* cuda_function = nullptr;  // CUDA kernels (a CUfunction)
    void* cuda_final_function = nullptr;  // split reductions: the pass that combines a row's slices
    inductor::CudaConfig cuda_config;  // how it is launched
    bool checks = false;  // CPU kernels with run-time checks take a status word after their buffers
  };

  // Generates and compiles every kernel of `plan` (throws jitc::CompileError). index32: every tensor of
  // the graph has fewer than 2^31 elements whatever its symbols (CUDA kernels then index in 32 bits).
  // tuning (mode=max-autotune): CUDA kernels keep the fastest of their candidate configurations.
  // times: receives the time of each stage (codegen, llvm, nvrtc, load, autotune) when not null.
  static std::shared_ptr<const ProgramCode> compile(inductor::Plan plan, const std::string& name, bool want_assembly,
                                                    bool index32 = false, const TuningShapes* tuning = nullptr,
                                                    CompileTimes* times = nullptr);
  // Loads code saved by serialize() without generating or compiling anything; nullptr if malformed.
  static std::shared_ptr<const ProgramCode> deserialize(const std::string& payload, const std::string& name);
  std::string serialize() const;

  inductor::Plan plan;
  std::shared_ptr<CpuModule> module;
  std::shared_ptr<CudaModule> cuda_module;
  std::string cuda_source;
  std::vector<inductor::CudaConfig> cuda_configs;  // per kernel (zeros for CPU kernels): launch configuration
  std::vector<std::string> cuda_names;  // per kernel: its function in the CUDA module
  std::vector<Entry> kernels;
  std::string kernel_ir, llvm_ir;  // for JITC_LOGS=output_code and JITC_DEBUG_DIR

 private:
  using Candidates = std::vector<std::vector<inductor::CudaConfig>>;  // per kernel
  std::optional<c10::Device> emit(bool index32, bool tuning, Candidates& candidates, std::vector<CudaSource>& cuda_units);
  std::string cpu_kernel_ir(const inductor::KernelLaunch& launch) const;
  std::string naming_kernels(const std::string& message) const;
  void compile_cuda(const std::vector<CudaSource>& units, const std::string& name, int device, const Candidates& candidates,
                    const TuningShapes* tuning, CompileTimes* times);
  void link();
  void keep_fastest(const std::vector<std::vector<inductor::CudaConfig>>& candidates, const TuningShapes& tuning);
  static std::string candidate_name(const inductor::Kernel& kernel, const inductor::CudaConfig& config, size_t candidates);
};

// Thrown by Program::run when a run-time check of a CPU kernel failed (an index out of range, an integer
// division by zero): the kernel's results are not eager's, and eager raises for such inputs. The engine
// then runs the call through eager replay, which raises eager's own error (type and text). Nothing of
// the program has written into arguments by then: its writes into them are extern steps after the
// kernels that compute them.
struct ChecksFailed {
  std::string kernel;
};

class Program {
 public:
  // `region`: the name of a call's NVTX range (profiling.h), used when the program launches CUDA kernels.
  Program(graph::Graph graph, std::shared_ptr<const ProgramCode> code, std::string region = "");

  // `values` has a slot per graph value, inputs filled. Returns false when a graph-break check fails
  // (`why` says which); ATen errors of extern calls propagate; throws ChecksFailed (see there).
  bool run(std::vector<at::Tensor>& values, const int64_t* symbols, std::string* why) const;

  const graph::Graph& graph() const { return graph_; }
  const ProgramCode& code() const { return *code_; }
  size_t kernel_count() const { return code_->plan.kernels.size(); }
  // The name of a call's NVTX range; null when the program launches no CUDA kernel (nor has a name).
  const char* nvtx_range() const { return nvtx_range_.empty() ? nullptr : nvtx_range_.c_str(); }
  std::string optimized_llvm_ir() const;
  std::string assembly() const;

 private:
  void launch(size_t k, std::vector<at::Tensor>& values, const int64_t* symbols, std::vector<at::Tensor>& pool) const;
  void run_kernel(size_t k, std::vector<at::Tensor>& values, const int64_t* symbols, std::vector<at::Tensor>& pool) const;
  void launch_on_gpu(size_t k, const c10::SmallVector<void*, 16>& pointers, const int64_t* symbols) const;
  void launch_split(size_t k, const c10::SmallVector<void*, 16>& pointers, const int64_t* symbols) const;
  at::Tensor allocate(graph::ValueId v, const int64_t* symbols, std::vector<at::Tensor>& pool) const;

  graph::Graph graph_;
  std::shared_ptr<const ProgramCode> code_;
  std::string nvtx_range_;
};

}  // namespace jitc::runtime
