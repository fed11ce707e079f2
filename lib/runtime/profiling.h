// Compiled code as the tools people already use see it: regions of LibTorch's profiler (kineto, through
// at::RecordFunction) and NVTX ranges for Nsight.
//
// - A compiled call is a region named compiled_region_name() (torch.compile's "Torch-Compiled Region"),
//   around everything the call runs: kernels, extern ATen calls (which ATen records itself), CUDA graphs.
// - A CPU kernel launch is a region named after the kernel (kineto sees nothing else of it); CUDA kernels
//   reach kineto through CUPTI under their function name, which is the same name.
// - When a program launches CUDA kernels, the call and each kernel launch are also NVTX ranges.
//
// Without a profiler a region costs at::getStepCallbacksUnlessEmpty's thread-local check (the dispatcher
// does the same for every op) and its name is never built.
#pragma once
#include <ATen/record_function.h>
#include <c10/macros/Macros.h>

#include <optional>
#include <string>

namespace jitc::runtime {

// "jitc-compiled region: <function> [<frame>/<entry>]", e.g. "jitc-compiled region: mlp_block [0/1]".
std::string compiled_region_name(const std::string& function, const std::string& compile_id);

// A region of LibTorch's profiler (or any RecordFunction callback) for the scope of the object. `name` is a
// callable returning the name (anything std::string_view takes), called only when a callback observes.
class ProfilerRegion {
 public:
  template <class Name>
  ProfilerRegion(at::RecordScope scope, Name&& name) {
    if (auto callbacks = at::getStepCallbacksUnlessEmpty(scope); C10_UNLIKELY(callbacks.has_value())) {
      record_.emplace(std::move(*callbacks));
      record_->before(std::string_view(name()));
    }
  }

 private:
  std::optional<at::RecordFunction> record_;  // ends the region when destroyed
};

// An NVTX range (default domain) for the scope of the object; none when `name` is null. NVTX3 is
// header-only: without an attached tool a push is a test of a null function pointer.
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) : active_(name != nullptr) {
    if (active_) push(name);
  }
  ~NvtxRange() {
    if (active_) pop();
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  static void push(const char* name);
  static void pop();
  bool active_;
};

}  // namespace jitc::runtime
