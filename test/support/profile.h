// Runs a function under LibTorch's kineto profiler (the C++ API behind torch.profiler) and looks up the
// events it recorded.
#pragma once
#include <torch/csrc/autograd/profiler_kineto.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace jitc::testing {

using torch::profiler::impl::ActivityType;

inline std::unique_ptr<torch::autograd::profiler::ProfilerResult> profile(const std::function<void()>& f,
                                                                          std::set<ActivityType> activities = {ActivityType::CPU}) {
  using namespace torch::autograd::profiler;
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  prepareProfiler(config, activities);
  enableProfiler(config, activities);
  try {
    f();
  } catch (...) {
    disableProfiler();
    throw;
  }
  return disableProfiler();
}

using Event = torch::autograd::profiler::KinetoEvent;

// The events whose name satisfies `matches`, in the order recorded.
inline std::vector<const Event*> events_where(const torch::autograd::profiler::ProfilerResult& result,
                                              const std::function<bool(const std::string&)>& matches) {
  std::vector<const Event*> out;
  for (const auto& e : result.events())
    if (matches(e.name())) out.push_back(&e);
  return out;
}

inline std::vector<const Event*> events_named(const torch::autograd::profiler::ProfilerResult& result, const std::string& name) {
  return events_where(result, [&](const std::string& n) { return n == name; });
}

// `inner` ran within `outer` (host clock, both on the same thread).
inline bool nested(const Event& inner, const Event& outer) {
  return inner.startThreadId() == outer.startThreadId() && inner.startNs() >= outer.startNs() && inner.endNs() <= outer.endNs();
}

// Every recorded event's name, for failure messages.
inline std::string event_names(const torch::autograd::profiler::ProfilerResult& result) {
  std::string names;
  for (const auto& e : result.events()) names += "\n  " + e.name();
  return names;
}

}  // namespace jitc::testing
