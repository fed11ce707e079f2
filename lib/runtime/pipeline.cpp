// The pipeline: from a traced graph to a loaded program. Read this file first; each stage is one call.
//
//   graph stages                    (logged under JITC_LOGS=passes when they change the graph; verified
//                                    after each in debug builds and under JITC_STRICT=1)
//     1. functionalize              graph/functionalize.h    mutation -> values + a copy_ epilogue
//     2. dead code, CSE             graph/passes.h
//     3. updates of inputs in place graph/reinplace.h        index_copy(cache) + write-back -> index_copy_
//     4. loss decompositions        inductor/decompositions.h cross_entropy, nll_loss -> gather + row reduction
//        norm decompositions        inductor/decompositions.h row norms -> abs, square, sum, sqrt
//     5. group norm statistics      inductor/group_norm_stats.h
//     6. channels-last convolutions inductor/channels_last.h (inference; training: the layouts
//                                   chosen when the joint graph was split)
//        frozen weights             inductor/frozen_weights.h  convolution and linear weights prepacked,
//                                   batch norms folded in (inference), once per version of the weights
//   7. cache lookup                 program_cache.h          memory, then disk: a hit skips 8-12
//   kernel stages
//     8. schedule                   inductor/scheduler.h     lowering and fusion into kernels + extern calls,
//                                   inductor/in_place_updates.h  then updates of inputs stored in place,
//                                   inductor/independent_kernels.h  and the kernels that may run at once
//     9. render                     Backend::render          per backend and device (inductor/backend.h)
//    10. compile                    Backend::compile
//    11. load                       Backend::load
//    12. tune                       Backend::tune            mode=max-autotune, then load again
//   13. keep                        program_cache.h          memory and disk
//
// An entry superseded by a symbolic one while its build runs stops before stages 1, 8 and 9
// (BuildSuperseded). Each stage's time goes to CompileTimes (JITC_LOGS=compile_times, Stats::codegen_stages).
#include "runtime/pipeline.h"

#include "graph/functionalize.h"
#include "graph/passes.h"
#include "graph/reinplace.h"
#include "inductor/backend.h"
#include "inductor/channels_last.h"
#include "inductor/decompositions.h"
#include "inductor/frozen_weights.h"
#include "inductor/in_place_updates.h"
#include "inductor/independent_kernels.h"
#include "inductor/group_norm_stats.h"
#include "inductor/scheduler.h"
#include "runtime/env.h"
#include "runtime/log.h"

#include <jitc/detail/internal_assert.h>
#include <jitc/errors.h>

#include <fmt/format.h>

#include <algorithm>

namespace jitc::runtime {

namespace {

// ---- graph stages -------------------------------------------------------------------------------------

graph::Graph functionalized(const graph::Graph& g) {
  std::string why;
  auto f = graph::functionalize(inductor::decompose_batch_norm_training(g), &why);
  if (!f) throw UnsupportedError("the graph cannot be functionalized: " + why);
  return graph::eliminate_common_subexpressions(graph::eliminate_dead_code(*f));
}

// No mutation before the write-back epilogue. functionalize needs concrete sizes (it runs ops on meta
// tensors), so a symbolic graph is functionalized through the two static graphs it was generalized
// from, and their functional forms are generalized again.
graph::Graph functional_graph(const Entry& entry) {
  const graph::Graph& g = entry.graph;
  if (graph::is_functional(g)) return inductor::decompose_batch_norm_training(g);  // a backward graph
  if (g.num_symbols == 0) return functionalized(g);
  if (!entry.first || !entry.second) throw UnsupportedError("a symbolic graph without the traces it came from");
  std::string why;
  auto symbolic = graph::generalize(functionalized(entry.first->graph), functionalized(entry.second->graph), entry.symbol_values, &why);
  if (!symbolic) throw UnsupportedError("the functional forms of the two traces do not generalize: " + why);
  return *symbolic;
}

// run_entry fills a program's inputs from the entry graph's, position by position.
void require_same_inputs(const graph::Graph& traced, const graph::Graph& functional) {
  bool same = traced.inputs.size() == functional.inputs.size();
  for (size_t i = 0; same && i < traced.inputs.size(); ++i)
    same = traced.inputs[i].kind == functional.inputs[i].kind && traced.inputs[i].leaf == functional.inputs[i].leaf;
  if (!same) throw InternalError("the functional graph's inputs differ from the traced graph's");
}

#ifdef NDEBUG
constexpr bool kDebugBuild = false;
#else
constexpr bool kDebugBuild = true;
#endif

// One graph stage: timed, logged when it changed the graph, verified where wanted.
template <class F>
graph::Graph graph_stage(const char* stage, const PipelineRequest& request, graph::Graph g, CompileTimes& times, F&& pass) {
  const bool logging = log_enabled(Artifact::kPasses);
  const std::string before = logging ? graph::to_text(g) : std::string();
  graph::Graph out = timed(&times, &CodegenStages::passes, [&] { return pass(std::move(g)); });
  if (kDebugBuild || env_strict()) graph::verify(out);
  if (logging) {
    const std::string after = graph::to_text(out);
    if (after != before) log(Artifact::kPasses, fmt::format("{} after {}:\n{}", request.name, stage, after), request.compile_id);
  }
  return out;
}

// A training step's forward (with a backward) or its backward.
bool is_training(const Entry& entry) { return entry.backward || entry.part == "backward"; }

// A training entry's values, and its backward's, in the layouts chosen when its joint graph was split.
graph::Graph training_layouts(const Entry& entry, const graph::Graph& g) {
  if (entry.backward) return inductor::forward_in_channels_last(g, entry.backward->saved, entry.backward->channels_last_saved);
  if (entry.part == "backward") return inductor::backward_in_channels_last(g);
  return g;
}

graph::Graph graph_stages(const PipelineRequest& request, CompileTimes& times) {
  const Entry& entry = *request.entry;
  // Logged against the traced graph: a graph that needed no rewriting is not printed again.
  graph::Graph g = graph_stage("functionalize", request, entry.graph, times, [&](graph::Graph) { return functional_graph(entry); });
  g = graph_stage("updates of inputs in place", request, std::move(g), times,
                  [](graph::Graph x) { return graph::reinplace_input_updates(x); });
  g = graph_stage("loss decompositions", request, std::move(g), times, [](graph::Graph x) { return inductor::decompose_losses(x); });
  g = graph_stage("norm decompositions", request, std::move(g), times, [](graph::Graph x) { return inductor::decompose_norms(x); });
  g = graph_stage("composite decompositions", request, std::move(g), times,
                  [](graph::Graph x) { return inductor::decompose_composites(x); });
  g = graph_stage("biases into matmuls", request, std::move(g), times,
                  [](graph::Graph x) { return inductor::fold_biases_into_matmuls(x); });
  g = graph_stage("gradient decompositions", request, std::move(g), times, [](graph::Graph x) { return inductor::decompose_gradients(x); });
  g = graph_stage("group norm statistics", request, std::move(g), times, [](graph::Graph x) { return inductor::group_norm_with_stats(x); });
  g = graph_stage("channels-last convolutions", request, std::move(g), times,
                  [](graph::Graph x) { return env_layout_optimization() ? inductor::convolutions_in_channels_last(x) : x; });
  g = graph_stage("channels-last training layouts", request, std::move(g), times,
                  [&](graph::Graph x) { return training_layouts(entry, x); });
  // Inference only: a training step updates the weights on every step.
  const bool training = is_training(entry);
  g = graph_stage("frozen convolutions", request, std::move(g), times,
                  [&](graph::Graph x) { return training ? x : inductor::freeze_convolutions(x); });
  g = graph_stage("frozen linears", request, std::move(g), times,
                  [&](graph::Graph x) { return training ? x : inductor::freeze_linears(x); });
  require_same_inputs(entry.graph, g);
  return g;
}

// ---- kernel stages ------------------------------------------------------------------------------------

inductor::Plan schedule_stage(const graph::Graph& g, const PipelineRequest& request, CompileTimes& times) {
  return timed(&times, &CodegenStages::lower_schedule, [&] {
    std::function<void(const std::string&)> log_fusion;  // empty: the scheduler formats no messages
    if (log_enabled(Artifact::kFusion)) log_fusion = [&](const std::string& m) { log(Artifact::kFusion, m, request.compile_id); };
    inductor::Plan plan = inductor::schedule(g, inductor::kKernelPrefix, log_fusion);
    if (const int placed = inductor::store_input_updates_in_place(plan, g); placed > 0)
      log(Artifact::kFusion, fmt::format("{} updates of inputs stored in place by the kernels computing them", placed), request.compile_id);
    plan.independent_runs = inductor::independent_kernel_runs(plan, g);
    return plan;
  });
}

// The plan's kernels grouped by backend and device, in plan order.
std::vector<ProgramCode::Unit> units_of(const inductor::Plan& plan) {
  std::vector<ProgramCode::Unit> units;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    const c10::Device device = plan.kernels[k].device;
    auto it = std::find_if(units.begin(), units.end(), [&](const auto& u) { return u.device.type() == device.type(); });
    if (it != units.end() && it->device != device)
      throw UnsupportedError(fmt::format("a graph whose kernels run on two {} devices", c10::DeviceTypeName(device.type())));
    if (it == units.end()) {
      const inductor::Backend* backend = inductor::backend_for(device.type());
      if (!backend) throw UnsupportedError(fmt::format("no backend generates code for device {}", device.str()));
      if (const std::string why = backend->unavailable(); !why.empty())
        throw UnsupportedError(fmt::format("the {} backend cannot compile here: {}", backend->target().name, why));
      ProgramCode::Unit unit;
      unit.backend = backend;
      unit.device = device;
      it = units.insert(units.end(), std::move(unit));
    }
    it->kernels.push_back(k);
  }
  return units;
}

// The plan's independent runs as positions among the unit's kernels (a run's kernels on other devices left out).
std::vector<std::vector<size_t>> runs_in_unit(const std::vector<std::vector<size_t>>& runs, const ProgramCode::Unit& unit) {
  std::vector<std::vector<size_t>> out;
  for (const auto& run : runs) {
    std::vector<size_t> local;
    for (size_t k : run)
      if (auto at = std::find(unit.kernels.begin(), unit.kernels.end(), k); at != unit.kernels.end())
        local.push_back(at - unit.kernels.begin());
    if (local.size() >= 2) out.push_back(std::move(local));
  }
  return out;
}

// Render, compile, load and (mode=max-autotune) tune one unit.
void build_unit(ProgramCode& code, ProgramCode::Unit& unit, const inductor::RenderOptions& render_options,
                const inductor::CompileOptions& options, const inductor::TuningShapes* tuning, CompileTimes* times) {
  const inductor::Backend& backend = *unit.backend;
  const auto kernels = code.launches(unit);
  inductor::RenderOptions options_of_unit = render_options;
  options_of_unit.independent_runs = runs_in_unit(code.plan.independent_runs, unit);
  auto source = timed(times, &CodegenStages::codegen, [&] { return backend.render(kernels, options_of_unit); });
  unit.source = source->text;
  unit.source_file = source->file;
  unit.binary = timed(times, backend.target().compile_stage, [&] { return backend.compile(*source, options); });
  JITC_INTERNAL_ASSERT(unit.binary->schedules.size() == kernels.size(), "a backend's binary lacks a schedule per kernel");
  unit.loaded = timed(times, &CodegenStages::load, [&] { return backend.load(*unit.binary, kernels, options); });
  if (!tuning) return;
  timed(times, &CodegenStages::autotune, [&] { backend.tune(*unit.binary, *unit.loaded, kernels, *tuning); });
  unit.loaded = timed(times, &CodegenStages::load, [&] { return backend.load(*unit.binary, kernels, options); });
}

// An entry superseded while its build ran (a build started at its trace): stop before the costly stages.
void stop_if_superseded(const Entry& entry) {
  if (entry.superseded.load(std::memory_order_relaxed)) throw BuildSuperseded{};
}

}  // namespace

std::shared_ptr<const ProgramCode> ProgramCode::compile(inductor::Plan plan, const std::string& name, bool want_assembly, bool index32,
                                                        const inductor::TuningShapes* tuning, CompileTimes* times, bool training) {
  auto code = std::make_shared<ProgramCode>();
  code->plan = std::move(plan);
  for (const auto& launch : code->plan.kernels) code->kernel_ir += inductor::to_text(launch.kernel);
  code->units = units_of(code->plan);
  const inductor::RenderOptions render_options{
      .name = name, .index32 = index32, .tuning = tuning != nullptr, .training = training, .independent_runs = {}};
  for (auto& unit : code->units)
    build_unit(*code, unit, render_options, {.name = name, .want_assembly = want_assembly, .device = unit.device}, tuning, times);
  code->link();
  return code;
}

PipelineResult run_pipeline(const PipelineRequest& request, CompileTimes& times) {
  PipelineResult out;
  stop_if_superseded(*request.entry);
  out.graph = graph_stages(request, times);
  const graph::Graph& g = out.graph;
  const Entry& entry = *request.entry;
  std::optional<inductor::TuningShapes> tuning;
  const bool sizes_known = g.num_symbols == 0 || entry.symbol_values.b.size() >= static_cast<size_t>(g.num_symbols);
  if (request.autotune && sizes_known)
    tuning = inductor::TuningShapes{&g, g.num_symbols > 0 ? entry.symbol_values.b : std::vector<int64_t>{}};

  const CacheLookup cached = find_code(g, request.name, tuning.has_value(), !request.want_assembly, request.compile_id, &times);
  if (cached.code) {
    out.code = cached.code;
    out.source = cached.source;
    return out;
  }
  stop_if_superseded(entry);
  inductor::Plan plan = schedule_stage(g, request, times);
  stop_if_superseded(entry);
  out.code = ProgramCode::compile(std::move(plan), request.name, request.want_assembly, fits_32_bits(g), tuning ? &*tuning : nullptr,
                                  &times, is_training(entry));
  keep_code(cached, g, out.code, request.name, tuning.has_value(), request.compile_id);
  return out;
}

}  // namespace jitc::runtime
