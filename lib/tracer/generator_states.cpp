#include "tracer/generator_states.h"

#include <ATen/Context.h>

#include <algorithm>
#include <mutex>

namespace jitc::tracer {

GeneratorStates::GeneratorStates(const std::vector<c10::Device>& devices) {
  std::vector<c10::Device> unique{c10::Device(c10::kCPU)};
  for (const auto& d : devices)
    if (d.is_cuda() && std::find(unique.begin(), unique.end(), d) == unique.end()) unique.push_back(d);
  for (const auto& d : unique) {
    at::Generator generator = at::globalContext().defaultGenerator(d);
    std::lock_guard<std::mutex> lock(generator.mutex());
    saved_.emplace_back(generator, generator.get_state());
  }
}

void GeneratorStates::restore() const {
  for (const auto& [generator, state] : saved_) {
    at::Generator g = generator;
    std::lock_guard<std::mutex> lock(g.mutex());
    g.set_state(state);
  }
}

}  // namespace jitc::tracer
