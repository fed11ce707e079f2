// The public entry points of include/jitc that are not templates.
#include "runtime/program_cache.h"
#include "runtime/engine.h"

#include <jitc/jitc.h>

#include <fmt/format.h>

#include <mutex>

namespace jitc {

namespace {

std::mutex g_registry_mutex;
std::vector<std::weak_ptr<detail::Engine>> g_engines;  // for jitc::reset()

}  // namespace

namespace detail {

std::shared_ptr<Engine> make_engine(Invoker invoker, Options options, int num_arguments, std::source_location where,
                                    std::shared_ptr<torch::nn::Module> module) {
  auto engine = std::make_shared<Engine>(std::move(invoker), std::move(options), num_arguments, where, std::move(module));
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  std::erase_if(g_engines, [](const auto& w) { return w.expired(); });
  g_engines.push_back(engine);
  return engine;
}

ResultLeaves engine_call(Engine& engine, c10::ArrayRef<Leaf> leaves) { return engine.call(leaves); }
ExplainOutput engine_explain(Engine& engine, c10::ArrayRef<Leaf> leaves) { return engine.explain(leaves); }
Stats engine_stats(const Engine& engine) { return engine.stats(); }
void engine_wait_for_compiles(Engine& engine) { engine.wait_for_background_builds(); }
const std::string& engine_name(const Engine& engine) { return engine.name(); }

}  // namespace detail

void reset() {
  std::vector<std::shared_ptr<detail::Engine>> live;
  {
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    for (const auto& w : g_engines)
      if (auto e = w.lock()) live.push_back(std::move(e));
  }
  for (const auto& e : live) e->reset();
}

void clear_cache() { runtime::clear_program_caches(); }

const char* to_string(Mode mode) {
  switch (mode) {
    case Mode::kDefault: return "default";
    case Mode::kReduceOverhead: return "reduce-overhead";
    case Mode::kMaxAutotune: return "max-autotune";
    case Mode::kMaxAutotuneNoCudagraphs: return "max-autotune-no-cudagraphs";
  }
  return "?";
}

const char* to_string(Backend backend) { return backend == Backend::kEager ? "eager" : "inductor"; }

std::string ExplainOutput::to_string() const {
  std::string s =
      fmt::format("Graph Count: {}\nGraph Break Count: {}\nOp Count: {}\nBreak Reasons:\n", graph_count, graph_break_count, op_count);
  for (size_t i = 0; i < break_reasons.size(); ++i)
    s += fmt::format("  Break Reason {}:\n    Reason: {}\n    Op: {}\n", i + 1, break_reasons[i].reason, break_reasons[i].op);
  s += "Ops per Graph:\n";
  for (size_t i = 0; i < ops_per_graph.size(); ++i) {
    s += fmt::format("  Ops {}:\n", i + 1);
    for (const auto& op : ops_per_graph[i]) s += "    " + op + "\n";
  }
  s += "Out Guards:\n";
  for (const auto& g : guards) s += "  " + g + "\n";
  return s + fmt::format("Compile Time: {:.6f} s\n", compile_seconds);
}

}  // namespace jitc
