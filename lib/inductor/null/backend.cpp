// The null backend: kernels of meta tensors (shapes and dtypes, no data) are scheduled and rendered as
// CUDA C, compiled into nothing and launched as no-ops, as tinygrad's ops_null serves its tests. It
// shows what a backend costs (this folder and one registry line) and lets CI schedule and render CUDA
// kernels on machines without a GPU; a program of meta tensors gives eager's shapes and dtypes.
#include "inductor/backend.h"
#include "inductor/cuda/codegen.h"

namespace jitc::inductor {

namespace {

// Nothing was compiled: the bytes are empty.
struct NullBinary final : Binary {
  std::string serialize() const override { return ""; }
};

// Meta tensors hold no data: there is nothing to compute.
class NullKernels final : public LoadedKernels {
 public:
  void launch(size_t, const LaunchArgs&) const override {}
};

class NullBackend final : public Backend {
 public:
  const Target& target() const override { return target_; }

  std::string identity(const c10::Device&) const override { return "null"; }

  std::unique_ptr<Source> render(const std::vector<const KernelLaunch*>& kernels, const RenderOptions& options) const override {
    auto source = std::make_unique<Source>();
    source->text = cuda_prelude();
    source->file = "kernels.cu";
    for (const KernelLaunch* k : kernels) {
      const CudaConfig config = default_cuda_config(k->kernel);
      source->text += emit_cuda(k->kernel, options.index32, config, k->kernel.name);
      source->schedules.push_back(cuda_schedule(config));
    }
    return source;
  }

  std::unique_ptr<Binary> compile(const Source& source, const CompileOptions&) const override {
    auto binary = std::make_unique<NullBinary>();
    binary->schedules = source.schedules;
    return binary;
  }

  std::unique_ptr<Binary> deserialize(const std::string& bytes) const override {
    return bytes.empty() ? std::make_unique<NullBinary>() : nullptr;
  }

  std::unique_ptr<LoadedKernels> load(const Binary&, const std::vector<const KernelLaunch*>&, const CompileOptions&) const override {
    return std::make_unique<NullKernels>();
  }

 private:
  // CUDA's capabilities, whose printer it uses.
  Target target_{.name = "null",
                 .device = c10::DeviceType::Meta,
                 .buffer_alignment = 1,
                 .reuses_released_buffers = false,
                 .nvtx_ranges = false,
                 .orders_loops_as_stored = false,
                 .normalization_row_kernels = false,
                 .symbolic_backward_decomposes_batch_norms = false,
                 .compile_stage = &CodegenStages::nvrtc};
};

}  // namespace

const Backend& null_backend() {
  static const auto& backend = *new NullBackend;
  return backend;
}

}  // namespace jitc::inductor
