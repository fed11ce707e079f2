// The registry of backends: adding one is a folder (lib/inductor/<name>/, defining <name>_backend())
// and one line of JITC_BACKENDS. Also what every backend shares: Schedule, the default allocate, the
// buffers max-autotune times candidates on.
#include "inductor/backend.h"

#include <jitc/errors.h>

#include <ATen/ops/empty_strided.h>
#include <fmt/format.h>

#include <algorithm>

#define JITC_BACKENDS(X) \
  X(cpu)                 \
  X(cuda)                \
  X(null)

namespace jitc::inductor {

#define JITC_DECLARE_BACKEND(name) const Backend& name##_backend();
JITC_BACKENDS(JITC_DECLARE_BACKEND)
#undef JITC_DECLARE_BACKEND

Schedule& Schedule::set(const std::string& name, int64_t value) {
  auto it = std::find_if(decisions.begin(), decisions.end(), [&](const auto& d) { return d.first == name; });
  if (it == decisions.end()) decisions.emplace_back(name, value);
  else it->second = value;
  return *this;
}

int64_t Schedule::get(const std::string& name) const {
  auto it = std::find_if(decisions.begin(), decisions.end(), [&](const auto& d) { return d.first == name; });
  return it == decisions.end() ? 0 : it->second;
}

std::string Schedule::text() const {
  std::string out;
  for (const auto& [name, value] : decisions)
    if (value != 0) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name, value);
  return out.empty() ? "defaults" : out;
}

const std::vector<std::vector<size_t>>& LoadedKernels::groups() const {
  static const auto& none = *new std::vector<std::vector<size_t>>;
  return none;
}

void LoadedKernels::launch_group(size_t, const LaunchArgs&) const {
  throw InternalError("launch_group on a backend whose kernels form no groups");
}

std::string Backend::output_code(const std::string& source, const std::string& file, const Binary&) const {
  return fmt::format("\n// {} ({})\n{}", file, target().name, source);
}

at::Tensor Backend::allocate(c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::ScalarType dtype, c10::Device device) const {
  return at::empty_strided(sizes, strides, at::TensorOptions().dtype(dtype).device(device));
}

std::vector<at::Tensor> tuning_buffers(const KernelLaunch& launch, const TuningShapes& shapes) {
  auto evaluate = [&](const graph::SymShape& shape) {
    std::vector<int64_t> out;
    for (const auto& e : shape) out.push_back(e.eval(shapes.symbols.data()));
    return out;
  };
  std::vector<at::Tensor> buffers;
  for (graph::ValueId v : launch.buffers) {
    const auto& m = shapes.graph->values[v].meta;
    const auto options = at::TensorOptions().dtype(m.dtype).device(launch.device);
    buffers.push_back(at::empty_strided(evaluate(m.sizes), evaluate(m.strides), options).zero_());
  }
  return buffers;
}

const std::vector<const Backend*>& backends() {
#define JITC_LIST_BACKEND(name) &name##_backend(),
  static const auto& all = *new std::vector<const Backend*>{JITC_BACKENDS(JITC_LIST_BACKEND)};
#undef JITC_LIST_BACKEND
  return all;
}

const Backend* backend_for(c10::DeviceType device) {
  const auto& all = backends();
  auto it = std::find_if(all.begin(), all.end(), [&](const Backend* b) { return b->target().device == device; });
  return it == all.end() ? nullptr : *it;
}

const Backend* backend_named(const std::string& name) {
  const auto& all = backends();
  auto it = std::find_if(all.begin(), all.end(), [&](const Backend* b) { return b->target().name == name; });
  return it == all.end() ? nullptr : *it;
}

}  // namespace jitc::inductor
