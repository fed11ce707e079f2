// Program: a scheduled graph with its kernels loaded, ready to run. Steps run in order: a kernel launch
// (outputs allocated with the traced strides, by the kernel's backend), an extern ATen call (as the eager
// backend runs it), or the release of an intermediate, whose memory the next output of the same size
// reuses where the backend allows. Nothing here knows a device: backends (inductor/backend.h) do.
//
// The compiled part (ProgramCode: plan, each backend's binary and loaded kernels) depends only on the
// functional graph's canonical text and the backends' identities, so it is shared by every program with
// the same key, in this process and, through the disk cache, in later ones (program_cache.h).
#pragma once
#include "graph/graph.h"
#include "inductor/backend.h"
#include "inductor/scheduler.h"
#include "runtime/derived_values.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace jitc::runtime {

struct CompileTimes;

struct ProgramCode {
  // The program's kernels on one backend and device: rendered, compiled, loaded.
  struct Unit {
    const inductor::Backend* backend = nullptr;
    c10::Device device{c10::kCPU};
    std::vector<size_t> kernels;      // their indices in plan.kernels
    std::string source, source_file;  // as rendered (empty when the code came from the disk cache)
    std::unique_ptr<inductor::Binary> binary;
    std::unique_ptr<inductor::LoadedKernels> loaded;
  };
  // Where kernel k of the plan is launched from.
  struct KernelRef {
    const inductor::LoadedKernels* loaded = nullptr;
    size_t index = 0;  // among its unit's kernels
    const inductor::Backend* backend = nullptr;
    size_t alignment = 1;  // its target's buffer_alignment, read on every launch
    int group = -1;        // the Group it is launched in (else alone)
  };
  // Kernels its backend launches as one (LoadedKernels::groups), at the first one's step.
  struct Group {
    const inductor::LoadedKernels* loaded = nullptr;
    size_t index = 0;             // among its unit's groups
    std::vector<size_t> members;  // plan kernel indices, in plan order
  };

  // Renders, compiles and loads every kernel of `plan` on its device's backend (pipeline.cpp; throws
  // jitc::CompileError or UnsupportedError). index32: every tensor of the graph has fewer than 2^31
  // elements whatever its symbols. tuning (mode=max-autotune): kernels keep the fastest of their candidate
  // schedules. times: receives the time of each stage when not null. training: a training step's program
  // (RenderOptions::training).
  static std::shared_ptr<const ProgramCode> compile(inductor::Plan plan, const std::string& name, bool want_assembly, bool index32 = false,
                                                    const inductor::TuningShapes* tuning = nullptr, CompileTimes* times = nullptr,
                                                    bool training = false);
  // Loads code saved by serialize() without generating or compiling anything; nullptr if malformed.
  static std::shared_ptr<const ProgramCode> deserialize(const std::string& payload, const std::string& name);
  std::string serialize() const;

  // The kernels of each unit, in the order its backend got them.
  std::vector<const inductor::KernelLaunch*> launches(const Unit& unit) const;
  // Fills `kernels` from the units.
  void link();

  inductor::Plan plan;
  std::vector<Unit> units;
  std::vector<KernelRef> kernels;  // per plan kernel
  std::vector<Group> groups;
  std::string kernel_ir;  // for JITC_LOGS=output_code and JITC_DEBUG_DIR
};

// Thrown by Program::run when a run-time check of a kernel failed (see inductor::ChecksFailed).
using ChecksFailed = inductor::ChecksFailed;

class Program {
 public:
  // `region`: the name of a call's NVTX range (profiling.h), used when a backend of the program names its
  // launches in NVTX.
  Program(graph::Graph graph, std::shared_ptr<const ProgramCode> code, std::string region = "");

  // `values` has a slot per graph value, inputs filled. Returns false when a graph-break check fails
  // (`why` says which); ATen errors of extern calls propagate; throws ChecksFailed (see there).
  bool run(std::vector<at::Tensor>& values, const int64_t* symbols, std::string* why) const;

  // The program has values derived from captured tensors (derived_values.h); derive() computes them ahead
  // of a call: `values` has a slot per graph value, the captured inputs filled.
  bool has_derived_values() const { return derived_ != nullptr; }
  void derive(std::vector<at::Tensor>& values) const;

  const graph::Graph& graph() const { return graph_; }
  const ProgramCode& code() const { return *code_; }
  size_t kernel_count() const { return code_->plan.kernels.size(); }
  // The name of a call's NVTX range; null when the program launches no kernel named in NVTX.
  const char* nvtx_range() const { return nvtx_range_.empty() ? nullptr : nvtx_range_.c_str(); }
  // The program draws random numbers (RNG ops run as extern calls) and holds kernels with run-time
  // checks: when a check fails the call runs again through eager replay, so its draws must be undone first.
  bool draws_and_checks() const { return draws_and_checks_; }

 private:
  struct Buffers;
  void run_kernel(size_t k, std::vector<at::Tensor>& values, const int64_t* symbols, std::vector<at::Tensor>& pool) const;
  void run_group(const ProgramCode::Group& group, std::vector<at::Tensor>& values, const int64_t* symbols,
                 std::vector<at::Tensor>& pool) const;
  void allocate_outputs(size_t k, std::vector<at::Tensor>& values, const int64_t* symbols, std::vector<at::Tensor>& pool) const;
  void add_buffers(size_t k, const std::vector<at::Tensor>& values, Buffers& buffers) const;
  void launch(const ProgramCode::KernelRef& ref, const Buffers& buffers, const int64_t* symbols, c10::Device device,
              const ProgramCode::Group* group) const;
  at::Tensor allocate(const inductor::Backend& backend, graph::ValueId v, const int64_t* symbols, std::vector<at::Tensor>& pool) const;

  graph::Graph graph_;
  std::shared_ptr<const ProgramCode> code_;
  std::string nvtx_range_;
  bool draws_and_checks_ = false;
  std::unique_ptr<DerivedValues> derived_;  // null without derived nodes
};

}  // namespace jitc::runtime
