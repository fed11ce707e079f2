#include "runtime/compile_times.h"

#include <fmt/format.h>

#include <utility>

namespace jitc::runtime {

namespace {

// The stages in the order a compile runs them, with their names in the log line.
constexpr std::pair<const char*, double CodegenStages::*> kStages[] = {
    {"passes", &CodegenStages::passes},     {"lower+schedule", &CodegenStages::lower_schedule},
    {"codegen", &CodegenStages::codegen},   {"llvm", &CodegenStages::llvm},
    {"nvrtc", &CodegenStages::nvrtc},       {"load", &CodegenStages::load},
    {"autotune", &CodegenStages::autotune},
};

}  // namespace

std::string describe(const CompileTimes& times) {
  std::string out = fmt::format("trace {:.1f} ms", times.trace * 1e3);
  for (const auto& [name, stage] : kStages)
    if (times.stages.*stage > 0) out += fmt::format(", {} {:.1f} ms", name, times.stages.*stage * 1e3);
  return out;
}

void add(CodegenStages& to, const CodegenStages& from) {
  for (const auto& [name, stage] : kStages) to.*stage += from.*stage;
}

}  // namespace jitc::runtime
