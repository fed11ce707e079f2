// ProgramCode as a cache payload: its kernels (inductor/kernel_serial.h), steps, texts, CPU object code
// and CUDA images; deserialize() loads the code without generating or compiling anything.
#include "runtime/program.h"

#include "inductor/kernel_serial.h"
#include "runtime/cpu_jit.h"
#include "runtime/cuda_jit.h"

#include <optional>

namespace jitc::runtime {

using inductor::Reader;
using inductor::Writer;
using inductor::read_kernel;
using inductor::write_kernel;

std::string ProgramCode::serialize() const {
  Writer w;
  w.number(static_cast<int64_t>(plan.kernels.size()));
  for (const auto& k : plan.kernels) {
    write_kernel(w, k.kernel);
    w.number(static_cast<int64_t>(k.device.type()));
    w.number(k.device.index());
    for (const auto* values : {&k.buffers, &k.outputs}) {
      w.number(static_cast<int64_t>(values->size()));
      for (auto v : *values) w.number(v);
    }
  }
  w.number(static_cast<int64_t>(plan.steps.size()));
  for (const auto& s : plan.steps) {
    w.number(static_cast<int64_t>(s.kind));
    w.number(s.index);
  }
  w.number(static_cast<int64_t>(plan.extern_reasons.size()));
  for (const auto& r : plan.extern_reasons) w.text(r);
  w.text(kernel_ir);
  w.text(llvm_ir);
  w.text(module ? module->object() : std::string());
  w.text(cuda_source);
  const std::vector<std::string> no_images;
  const auto& images = cuda_module ? cuda_module->images() : no_images;
  w.number(static_cast<int64_t>(images.size()));
  for (const auto& image : images) w.text(image);
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    w.number(cuda_configs[k].threads);
    w.number(cuda_configs[k].tile);
    w.number(cuda_configs[k].columns);
    w.number(cuda_configs[k].split);
    w.text(cuda_names[k]);
  }
  return w.take();
}

std::shared_ptr<const ProgramCode> ProgramCode::deserialize(const std::string& payload, const std::string& name) {
  auto code = std::make_shared<ProgramCode>();
  std::string object;
  std::vector<std::string> cuda_images;
  std::optional<c10::Device> gpu;
  try {
    Reader r(payload);
    for (int64_t n = r.number(); n > 0; --n) {
      inductor::KernelLaunch k;
      k.kernel = read_kernel(r);
      const auto type = static_cast<c10::DeviceType>(r.number());
      k.device = c10::Device(type, static_cast<c10::DeviceIndex>(r.number()));
      if (k.device.is_cuda()) gpu = k.device;
      for (auto* values : {&k.buffers, &k.outputs})
        for (int64_t j = r.number(); j > 0; --j) values->push_back(static_cast<graph::ValueId>(r.number()));
      code->plan.kernels.push_back(std::move(k));
    }
    for (int64_t n = r.number(); n > 0; --n) {
      inductor::Step s;
      s.kind = static_cast<inductor::Step::Kind>(r.number());
      s.index = static_cast<int>(r.number());
      code->plan.steps.push_back(s);
    }
    for (int64_t n = r.number(); n > 0; --n) code->plan.extern_reasons.push_back(r.text());
    code->kernel_ir = r.text();
    code->llvm_ir = r.text();
    object = r.text();
    code->cuda_source = r.text();
    for (int64_t n = r.number(); n > 0; --n) cuda_images.push_back(r.text());
    for (size_t k = 0; k < code->plan.kernels.size(); ++k) {
      inductor::CudaConfig config;
      config.threads = static_cast<int>(r.number());
      config.tile = r.number();
      config.columns = static_cast<int>(r.number());
      config.split = static_cast<int>(r.number());
      code->cuda_configs.push_back(config);
      code->cuda_names.push_back(r.text());
    }
    if (!r.done()) return nullptr;
  } catch (const std::exception&) {
    return nullptr;
  }
  if (!object.empty()) code->module = load_cpu_object(object, name);
  if (gpu) code->cuda_module = load_cuda_modules(cuda_images, name, gpu->index());
  code->link();
  return code;
}

}  // namespace jitc::runtime
