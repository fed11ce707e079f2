// The scheduler turns a functional graph into a Plan: fused kernels and extern ATen calls in an order
// that respects their dependencies, and the points where intermediates die.
//
// Fusion, as Inductor does it (reference/dynamo_inductor.md section 4.3):
//   - vertical: a value read by one kernel is inlined into it (pointwise chains, views, broadcasts, and
//     reductions read per row, so softmax, layer_norm and rms_norm + residual are one kernel each);
//   - a value is stored to a buffer only when something needs it as a tensor (a graph output, an extern
//     op's argument) or when a kernel would have to recompute a reduction per row;
//   - horizontal: stored values with the same iteration space share one kernel (up to kMaxFusedValues);
//   - every decision and rejection is logged with its reason (JITC_LOGS=fusion).
#pragma once
#include "graph/graph.h"
#include "inductor/kernel_ir.h"

#include <functional>
#include <string>
#include <vector>

namespace jitc::inductor {

constexpr size_t kMaxFusedValues = 16;  // stored values per kernel (Inductor: max_fusion_size = 64 nodes)
constexpr int64_t kTile = 4096;         // elements per tile of a pointwise kernel's last dim

struct KernelLaunch {
  Kernel kernel;
  c10::Device device{c10::kCPU};        // where its buffers live: the CPU code generator or the CUDA one
  std::vector<graph::ValueId> buffers;  // the value each kernel buffer holds, in argument order
  std::vector<graph::ValueId> outputs;  // the values it writes (allocated just before it runs)
  std::vector<std::string> ops;         // the ATen ops it computes, for messages (not kept in the disk cache)
  // Per output (empty: none): the graph input whose memory it is stored into instead of a fresh buffer
  // (kNoValue: fresh), an update of that input (in_place_updates.h).
  std::vector<graph::ValueId> output_memory;
};

struct Step {
  enum class Kind { kKernel, kExtern, kRelease };
  Kind kind = Kind::kExtern;
  int index = -1;  // kKernel: into Plan::kernels; kExtern: node index; kRelease: value id
};

struct Plan {
  std::vector<KernelLaunch> kernels;
  std::vector<Step> steps;
  std::vector<std::string> extern_reasons;  // one line per extern op: op name and why (perf_hints)
  // Kernels that may run at once (independent_kernels.h), for backends with combo kernels; render reads
  // them (not kept in the disk cache: the binary keeps what its backend made of them).
  std::vector<std::vector<size_t>> independent_runs;
};

// The plan as JITC_LOGS=schedule prints it: one line per step, each kernel with the values it stores and
// the buffers it reads, each extern op with its results, each release (plan_text.cpp).
std::string plan_text(const Plan& plan, const graph::Graph& graph);

// What generated kernels (CPU and CUDA alike) are called: the name in profiler traces, Nsight, LLVM IR
// and CUDA C.
inline constexpr const char* kKernelPrefix = "jitc_fused";
// Names stay short enough to read in a trace and in Nsight's kernel column.
inline constexpr size_t kMaxKernelNameLength = 64;

// "<prefix>_<ops>_<index>": up to four distinct ATen op names of `ops` ("aten::_softmax.int" reads as
// softmax) joined by '_', as many whole names as fit kMaxKernelNameLength (a first name too long for it
// is cut); `index`, the kernel's position in its plan, keeps names unique in a program.
std::string fused_kernel_name(const std::string& prefix, const std::vector<std::string>& ops, size_t index);

// Schedules `graph` (functional: no mutation before its copy_ epilogue). Kernel names start with
// `prefix` (kKernelPrefix in programs). `log` receives the fusion decisions.
Plan schedule(const graph::Graph& graph, const std::string& prefix, const std::function<void(const std::string&)>& log);

}  // namespace jitc::inductor
