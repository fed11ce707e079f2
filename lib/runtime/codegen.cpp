// Engine: code generation for backend=inductor. An entry's graph is functionalized, scheduled into
// fused kernels and extern calls, and compiled on the entry's first hit. Any failure leaves that entry on
// the eager backend with one warning naming the cause: a user's program never fails because of it.
#include "graph/functionalize.h"
#include "graph/passes.h"
#include "inductor/scheduler.h"
#include "runtime/engine.h"
#include "runtime/log.h"
#include "runtime/program.h"

#include <jitc/errors.h>

#include <fmt/format.h>

#include <chrono>

namespace jitc::detail {

namespace {

// The graph a code generator consumes: no mutation before the write-back epilogue.
graph::Graph functional_graph(const graph::Graph& g) {
  if (graph::is_functional(g)) return g;
  if (g.num_symbols > 0) throw UnsupportedError("in-place ops in a graph with dynamic sizes are not functionalized yet");
  std::string why;
  auto f = graph::functionalize(g, &why);
  if (!f) throw UnsupportedError("the graph cannot be functionalized: " + why);
  return graph::eliminate_common_subexpressions(graph::eliminate_dead_code(*f));
}

}  // namespace

const runtime::Program* Engine::program_for(const runtime::Entry& entry) {
  if (options_.backend != Backend::kInductor) return nullptr;
  std::call_once(entry.program_once, [&] { entry.program = build_program(entry); });
  return entry.program.get();
}

std::shared_ptr<const runtime::Program> Engine::build_program(const runtime::Entry& entry) {
  const std::string id = compile_id(entry.compile_number);
  const auto started = std::chrono::steady_clock::now();
  try {
    graph::Graph g = functional_graph(entry.graph);
    auto plan = inductor::schedule(g, "cpp_fused", [&](const std::string& m) { runtime::log(runtime::Artifact::kFusion, m, id); });
    for (const auto& reason : plan.extern_reasons)
      runtime::log(runtime::Artifact::kPerfHints, fmt::format("{} runs as an extern ATen call ({})", name_, reason), id);
    auto program = std::make_shared<runtime::Program>(std::move(g), std::move(plan), fmt::format("{}_{}", name_, entry.compile_number));
    if (runtime::log_enabled(runtime::Artifact::kOutputCode))
      runtime::log(runtime::Artifact::kOutputCode,
                   fmt::format("Output code of {}:\n{}\n{}", name_, program->kernel_ir(), program->optimized_llvm_ir()), id);
    kernels_compiled_ += static_cast<int64_t>(program->kernel_count());
    programs_compiled_ += 1;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::lock_guard<std::mutex> lock(stats_mutex_);
    compile_stats_.compile_seconds += seconds;
    return program;
  } catch (const std::exception& e) {
    runtime::warn(fmt::format("jitc: '{}' graph {} runs through the eager backend: code generation failed: {}", name_, id, e.what()), id);
    return nullptr;
  }
}

}  // namespace jitc::detail
