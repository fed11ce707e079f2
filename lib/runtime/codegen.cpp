// Engine: code generation for backend=inductor. An entry's graph goes through the pipeline
// (pipeline.cpp: functionalized, scheduled into fused kernels and extern calls, compiled) on the entry's
// first hit. Any failure leaves that entry on
// the eager backend with one warning naming the cause: a user's program never fails because of it.
#include "cache/files.h"
#include "graph/passes.h"
#include "runtime/compile_times.h"
#include "runtime/background_threads.h"
#include "runtime/cuda_graphs.h"
#include "runtime/engine.h"
#include "runtime/env.h"
#include "runtime/error_text.h"
#include "runtime/strict.h"
#include "runtime/log.h"
#include "runtime/pipeline.h"
#include "runtime/profiling.h"
#include "runtime/program.h"
#include "runtime/slow_compile.h"

#include <jitc/errors.h>

#include <ATen/ThreadLocalState.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <future>
#include <system_error>
#include <thread>

namespace jitc::detail {

namespace {

void write_file(const std::string& path, const std::string& text) {
  const std::string why = cache::files::write(path, text);
  if (!why.empty()) throw std::runtime_error(fmt::format("cannot write {}: {}", path, why));
}

// JITC_DEBUG_DIR/<function>_<compile>/: what each stage produced, to read or diff.
void dump_artifacts(const std::string& root, const std::string& name, const graph::Graph& traced, const graph::Graph& functional,
                    const runtime::Program& program) {
  try {
    using cache::files::join;
    const std::string dir = join(root, name);
    const std::string why = cache::files::make_directories(dir);
    if (!why.empty()) throw std::runtime_error(fmt::format("cannot create {}: {}", dir, why));
    write_file(join(dir, "graph.txt"), graph::to_text(traced));
    write_file(join(dir, "graph.dot"), graph::to_dot(traced));
    write_file(join(dir, "functional.txt"), graph::to_text(functional));
    write_file(join(dir, "kernels.txt"), program.code().kernel_ir);
    for (const auto& unit : program.code().units) {
      write_file(join(dir, unit.source_file), unit.source);
      for (const auto& artifact : unit.binary->artifacts) write_file(join(dir, artifact.file), artifact.text);
    }
  } catch (const std::exception& e) {
    runtime::warn(fmt::format("jitc: JITC_DEBUG_DIR: {}", e.what()));
  }
}

// Kernel IR, then what each backend shows of its code (Backend::output_code).
std::string output_code(const runtime::Program& program) {
  std::string text = program.code().kernel_ir;
  for (const auto& unit : program.code().units) text += unit.backend->output_code(unit.source, unit.source_file, *unit.binary);
  return text;
}

// One line per program: where its compile time went, the entry's trace included. `build_seconds`: the
// program's part (the total's remainder beyond the stages: cache keys, dumps, logs).
void log_compile_times(const std::string& name, const runtime::CompileTimes& times, double build_seconds, runtime::CodeSource source,
                       const std::string& id) {
  if (!runtime::log_enabled(runtime::Artifact::kCompileTimes)) return;
  const char* from = source == runtime::CodeSource::kMemory ? ", code from the memory cache"
                     : source == runtime::CodeSource::kDisk ? ", code from the disk cache"
                                                            : "";
  runtime::log(
      runtime::Artifact::kCompileTimes,
      fmt::format("compile times {}: {} (total {:.1f} ms{})", name, runtime::describe(times), (times.trace + build_seconds) * 1e3, from),
      id);
}

// "extern: convolution x53, addmm x1": the ops a program runs as ATen calls between its kernels, in the
// order they first appear, from the scheduler's "aten::name.overload: why" lines (JITC_LOGS=fusion gives
// each op's reason). Empty when every op became kernel code.
std::string extern_summary(const std::vector<std::string>& extern_reasons) {
  std::vector<std::pair<std::string, int>> counts;
  for (const auto& reason : extern_reasons) {
    std::string op = reason.substr(0, reason.find(": "));
    if (op.rfind("aten::", 0) == 0) op.erase(0, 6);
    op = op.substr(0, op.find('.'));
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == op; });
    if (it == counts.end()) counts.emplace_back(op, 1);
    else it->second += 1;
  }
  std::string text;
  for (const auto& [op, n] : counts) text += fmt::format("{}{} x{}", text.empty() ? "" : ", ", op, n);
  return text;
}

// Each kernel's schedule as its backend decided it (and max-autotune chose), one line per kernel.
std::string schedules_text(const runtime::ProgramCode& code) {
  std::string text;
  for (const auto& unit : code.units)
    for (size_t i = 0; i < unit.kernels.size(); ++i)
      text += fmt::format("\n  {} ({} schedule): {}", code.plan.kernels[unit.kernels[i]].kernel.name, unit.backend->target().name,
                          unit.binary->schedules[i].text());
  return text;
}

// The program's derived weights (prepacked, folded: derived_values.h) computed from the captured tensors
// as they are now, on the build's thread: the first call that runs the program does not pay for them
// (a call sees any later change, as always). Not for graphs with symbols (their sizes come with a call),
// nor where a captured tensor is gone; a failure leaves them to the first call.
void derive_weights(const runtime::Entry& entry, const runtime::Program& program) {
  const graph::Graph& g = program.graph();
  if (!program.has_derived_values() || g.num_symbols > 0) return;
  runtime::CapturedTensors captured;
  captured.lock(entry);
  std::vector<at::Tensor> values(g.values.size());
  for (size_t k = 0; k < entry.captured_inputs.size(); ++k) {
    if (!captured.refs[k].defined()) return;
    values[g.inputs[entry.captured_inputs[k]].value] = at::Tensor(captured.refs[k]);
  }
  for (const auto& in : g.inputs)
    if (in.kind == graph::InputKind::kConstant) values[in.value] = in.constant;
  try {
    program.derive(values);
  } catch (const std::exception&) {  // an allocation failed, say: the call derives them, and raises what eager would
  }
}

// Modes whose builds may run while calls go on: not max-autotune, which times kernels while it builds
// (a busy machine would mislead it).
bool builds_off_the_call(Mode mode) { return mode == Mode::kDefault || mode == Mode::kReduceOverhead; }

// torch.compile's modes that use cudagraph trees.
bool uses_cuda_graphs(Mode mode) { return mode == Mode::kReduceOverhead || mode == Mode::kMaxAutotune; }

}  // namespace

const runtime::Program* Engine::program_for(const runtime::Entry& entry) {
  if (options_.backend != Backend::kInductor) return nullptr;
  // std::call_once costs a few thread-local accesses on every hit; after the build a flag suffices.
  if (entry.program_built.load(std::memory_order_acquire)) return entry.program.get();
  if (builds_in_background()) {
    if (!entry.program_requested.exchange(true)) start_background_build(entry);
    return nullptr;
  }
  build_once(entry);  // waits for a build started at the trace
  return entry.program.get();
}

// A build starts as soon as its entry is installed, on a thread of its own, rather than at the entry's
// first hit: the rest of the call that traced it (a training step's eager backward and optimizer, the
// traces of other compiled functions) runs meanwhile, and the builds of a step's functions overlap. The
// first hit then waits for it (calls wait for builds) or finds it done (builds in the background). This
// is when torch.compile compiles a frame: at its first call. Modes as for builds in the background:
// max-autotune times kernels while it builds, which a busy caller would mislead. An entry superseded
// by a symbolic one before its kernels are scheduled stops there (Entry::superseded).
void Engine::request_build(const runtime::Entry& entry) {
  if (options_.backend != Backend::kInductor) return;
  if (!builds_off_the_call(options_.mode)) return;
  if (!runtime::env_build_at_trace()) return;
  if (!entry.program_requested.exchange(true)) start_background_build(entry);
}

// Where the calls go on through eager replay while the program builds: modes default and reduce-overhead
// (a CUDA graph is captured on the calls after the build), on either device; not max-autotune, which
// times kernels while it builds (a busy machine would mislead it). Options and JITC_COMPILE_IN_BACKGROUND
// permitting. A training entry's backward builds with its forward.
bool Engine::builds_in_background() const {
  if (!runtime::env_compile_in_background().value_or(options_.compile_in_background)) return false;
  return builds_off_the_call(options_.mode);
}

void Engine::start_background_build(const runtime::Entry& entry) {
  {
    std::lock_guard<std::mutex> lock(background_mutex_);
    ++background_builds_;
  }
  auto finished = [this] {
    std::lock_guard<std::mutex> lock(background_mutex_);
    --background_builds_;
    background_done_.notify_all();
  };
  // The build holds the entry (a symbolic entry may replace it in the meantime) and ATen's thread-local
  // state (grad mode, dispatch keys), as at::launch passes it on; the engine outlives the build: reset()
  // and the destructor wait for it.
  try {
    runtime::start_background_thread([this, finished, held = entry.shared_from_this(), state = at::ThreadLocalState()]() mutable {
      {
        at::ThreadLocalStateGuard guard(state);
        build_in_background(*held);
        held.reset();  // before the count drops: the engine may go then, and what the entry's program holds with it
      }
      finished();
    });
  } catch (const std::system_error&) {  // no thread to spare: a later call asks again, or builds it itself
    finished();
    entry.program_requested.store(false);
  }
}

void Engine::build_in_background(const runtime::Entry& entry) {
  try {
    build_once(entry);
  } catch (const std::exception& e) {  // JITC_STRICT=1 rethrows a failed build: nobody to catch it here
    runtime::warn(fmt::format("jitc: '{}' graph {} runs through eager replay: its build in the background failed: {}", name_,
                              compile_id(entry.compile_number), runtime::error_text(e)),
                  compile_id(entry.compile_number));
  }
}

void Engine::wait_for_background_builds() {
  std::unique_lock<std::mutex> lock(background_mutex_);
  background_done_.wait(lock, [&] { return background_builds_ == 0; });
}

void Engine::build_once(const runtime::Entry& entry) {
  std::call_once(entry.program_once, [&] {
    // A training entry's backward program is built now (autograd runs it, maybe on another thread), on a
    // thread of its own while the forward's builds: their NVRTC or LLVM compiles share the cores.
    // ATen's thread-local state (grad mode, dispatch keys) goes with it, as at::launch passes it on.
    std::future<void> backward;
    if (entry.backward)
      backward = std::async(std::launch::async, [&, state = at::ThreadLocalState()] {
        at::ThreadLocalStateGuard guard(state);
        build_once(*entry.backward->entry);
      });
    entry.program = build_program(entry);
    if (entry.program) derive_weights(entry, *entry.program);
    if (backward.valid()) backward.get();
    // A training entry's saved values must outlive the next call, which CUDA graphs' static outputs do not.
    if (entry.program && uses_cuda_graphs(options_.mode) && !entry.backward && entry.part.empty()) {
      const std::string id = compile_id(entry.compile_number);
      auto log = [this, id](const std::string& m) { runtime::log(runtime::Artifact::kPerfHints, fmt::format("{}: {}", name_, m), id); };
      entry.cuda_graphs = std::make_shared<runtime::CudaGraphs>(*entry.program, log, &cuda_graph_counters_);
    }
    entry.program_built.store(true, std::memory_order_release);
  });
}

std::shared_ptr<const runtime::Program> Engine::build_program(const runtime::Entry& entry) {
  const std::string id = compile_id(entry.compile_number);
  const auto started = std::chrono::steady_clock::now();
  runtime::CompileTimes times;
  times.trace = entry.trace_seconds;
  const std::string module_name = fmt::format("{}_{}{}{}", name_, entry.compile_number, entry.part.empty() ? "" : "_", entry.part);
  const runtime::SlowCompileNotice notice(module_name, entry.graph.nodes.size(), id);
  try {
    const std::string debug_dir = runtime::env_debug_dir();
    const bool autotune = options_.mode == Mode::kMaxAutotune || options_.mode == Mode::kMaxAutotuneNoCudagraphs;
    auto obtained = runtime::run_pipeline(
        {.entry = &entry, .name = module_name, .compile_id = id, .want_assembly = !debug_dir.empty(), .autotune = autotune}, times);
    graph::Graph& g = obtained.graph;
    if (obtained.source != runtime::CodeSource::kCompiled)
      runtime::log(
          runtime::Artifact::kFusion,
          fmt::format("{}: code from the compile cache, fused when it was compiled (JITC_DISABLE_CACHE=1 logs the decisions)", name_), id);
    if (const std::string externs = extern_summary(obtained.code->plan.extern_reasons); !externs.empty())
      runtime::log(runtime::Artifact::kPerfHints, fmt::format("{}: extern: {}", module_name, externs), id);
    if (runtime::log_enabled(runtime::Artifact::kSchedule))
      runtime::log(runtime::Artifact::kSchedule,
                   fmt::format("Schedule of {}: {}{}", name_, inductor::plan_text(obtained.code->plan, g), schedules_text(*obtained.code)),
                   id);
    const graph::Graph functional = debug_dir.empty() ? graph::Graph() : g;
    auto program = std::make_shared<runtime::Program>(std::move(g), obtained.code, runtime::compiled_region_name(name_, id));
    if (!debug_dir.empty()) dump_artifacts(debug_dir, module_name, entry.graph, functional, *program);
    if (runtime::log_enabled(runtime::Artifact::kOutputCode))
      runtime::log(runtime::Artifact::kOutputCode, fmt::format("Output code of {}:\n{}", name_, output_code(*program)), id);
    if (obtained.source == runtime::CodeSource::kCompiled) kernels_compiled_ += static_cast<int64_t>(program->kernel_count());
    else programs_from_cache_ += 1;
    programs_compiled_ += 1;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    log_compile_times(module_name, times, seconds, obtained.source, id);
    std::lock_guard<std::mutex> lock(stats_mutex_);
    compile_stats_.compile_seconds += seconds;
    compile_stats_.codegen_seconds += seconds;
    runtime::add(compile_stats_.codegen_stages, times.stages);
    return program;
  } catch (const runtime::BuildSuperseded&) {
    return nullptr;  // never run: nothing to warn about
  } catch (const std::exception& e) {
    runtime::rethrow_if_strict(e);
    runtime::warn(
        fmt::format("jitc: '{}' graph {} runs through the eager backend: code generation failed: {}", name_, id, runtime::error_text(e)),
        id);
    return nullptr;
  }
}

}  // namespace jitc::detail
