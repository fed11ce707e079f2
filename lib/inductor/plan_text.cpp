#include "inductor/scheduler.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace jitc::inductor {

namespace {

std::string values_text(const std::vector<graph::ValueId>& values) {
  std::vector<std::string> names;
  for (graph::ValueId v : values)
    if (v != graph::kNoValue) names.push_back(fmt::format("buf{}", v));
  return names.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(names, ", "));
}

std::string kernel_line(const KernelLaunch& launch) {
  std::vector<graph::ValueId> reads;
  for (graph::ValueId v : launch.buffers)
    if (std::find(launch.outputs.begin(), launch.outputs.end(), v) == launch.outputs.end()) reads.push_back(v);
  std::string in_place;
  for (size_t j = 0; j < launch.output_memory.size(); ++j)
    if (launch.output_memory[j] != graph::kNoValue)
      in_place += fmt::format(", buf{} in input buf{}", launch.outputs[j], launch.output_memory[j]);
  return fmt::format("kernel {} on {}: writes {}; reads {}{}", launch.kernel.name, launch.device.str(), values_text(launch.outputs),
                     values_text(reads), in_place.empty() ? "" : " (in place:" + in_place.substr(1) + ")");
}

std::string extern_line(const graph::Node& n) {
  std::vector<graph::ValueId> results;
  for (const auto& out : n.outputs) results.insert(results.end(), out.values.begin(), out.values.end());
  return fmt::format("extern {}: writes {}", n.name(), values_text(results));
}

}  // namespace

std::string plan_text(const Plan& plan, const graph::Graph& graph) {
  size_t externs = 0, releases = 0;
  std::string lines;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    std::string text;
    switch (step.kind) {
      case Step::Kind::kKernel: text = kernel_line(plan.kernels[step.index]); break;
      case Step::Kind::kExtern: text = extern_line(graph.nodes[step.index]), ++externs; break;
      case Step::Kind::kRelease: text = fmt::format("release buf{} (its buffer may serve a later output)", step.index), ++releases; break;
    }
    lines += fmt::format("\n  {:>3}: {}", s, text);
  }
  return fmt::format("{} kernels, {} extern calls, {} releases; outputs {}:{}", plan.kernels.size(), externs, releases,
                     values_text(graph.outputs), lines);
}

}  // namespace jitc::inductor
