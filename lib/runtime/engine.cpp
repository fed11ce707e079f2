#include "runtime/engine.h"

#include "runtime/argument_grads.h"
#include "runtime/global_state.h"

#include "graph/written_inputs.h"
#include "runtime/eager_replay.h"
#include "runtime/program.h"
#include "runtime/training.h"
#include "runtime/profiling.h"
#include "runtime/env.h"
#include "runtime/log.h"
#include "runtime/marks.h"
#include "runtime/module_state.h"
#include "tracer/trace.h"

#include <jitc/errors.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <algorithm>

namespace jitc::detail {

namespace {

std::atomic<int> g_next_frame{0};

// Per-thread replay scratch: one slot per graph value, reused so that a hit allocates no table. A run
// nested in another (an op calling a compiled function) gets its own.
class ValuesLease {
 public:
  ValuesLease() : values_(depth_++ == 0 ? shared_ : own_) {}
  ~ValuesLease() {
    values_.assign(values_.size(), at::Tensor());  // release intermediates now, not at the next call
    --depth_;
  }
  std::vector<at::Tensor>& get() { return values_; }

 private:
  static thread_local int depth_;
  static thread_local std::vector<at::Tensor> shared_;
  std::vector<at::Tensor> own_;
  std::vector<at::Tensor>& values_;
};
thread_local int ValuesLease::depth_ = 0;
thread_local std::vector<at::Tensor> ValuesLease::shared_;

// After a failed run-time check the program's writes into inputs have happened: the replay that raises
// eager's error writes into copies, so that no write happens twice.
void copy_written_inputs(const graph::Graph& g, std::vector<at::Tensor>& values) {
  for (size_t p : graph::inputs_written_before(g, g.nodes.size()))
    if (at::Tensor& t = values[g.inputs[p].value]; t.defined()) t = t.clone();
}

// Undoes the draws of a run that did not complete (`state` undefined: nothing was saved).
void restore_generator(at::Generator& generator, const at::Tensor& state) {
  if (!state.defined()) return;
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

}  // namespace

Engine::Engine(Invoker invoker, Options options, int num_arguments, std::source_location where, std::shared_ptr<torch::nn::Module> module)
    : invoker_(std::move(invoker)),
      options_(std::move(options)),
      module_(std::move(module)),
      num_arguments_(num_arguments),
      where_(fmt::format("{}:{}", where.file_name(), where.line())),
      frame_id_(g_next_frame.fetch_add(1)) {
  name_ = options_.name.empty() ? fmt::format("compiled_fn_{}", frame_id_) : options_.name;
  validate_options();
}

Engine::~Engine() { wait_for_background_builds(); }

// Mistakes in Options are reported when the function is compiled, not ignored at some later call.
void Engine::validate_options() const {
  for (const auto& m : options_.dim_marks)
    if (m.argument < 0 || m.argument >= num_arguments_ || (m.dim < 0 && m.dim != DimMark::kValue) || m.dim >= 64 || m.min > m.max)
      throw UnsupportedError(
          fmt::format("jitc::Options for '{}': a dim mark names argument {} dim {} (range [{}, {}]), but the callable takes {} "
                      "argument(s); give an argument position in [0, {}), a dim in [0, 64) (DimMark::kValue for a scalar "
                      "argument) and min <= max",
                      name_, m.argument, m.dim, m.min, m.max, num_arguments_, num_arguments_));
  if (options_.arg_names.size() > static_cast<size_t>(num_arguments_))
    throw UnsupportedError(fmt::format("jitc::Options for '{}': {} arg_names for a callable of {} argument(s)", name_,
                                       options_.arg_names.size(), num_arguments_));
  if (options_.recompile_limit < 0)
    throw UnsupportedError(fmt::format("jitc::Options for '{}': recompile_limit must be >= 0, got {}", name_, options_.recompile_limit));
}

ResultLeaves Engine::call(c10::ArrayRef<Leaf> leaves) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  return dispatch(leaves);
}

ResultLeaves Engine::dispatch(c10::ArrayRef<Leaf> leaves) {
  if (tracer::is_tracing()) return invoker_(leaves);  // called inside another trace: inline
  if (runtime::env_disabled() || eager_only_.load(std::memory_order_relaxed)) return run_eager(leaves);
  Leaves with_grads;
  if (reads_argument_grads_.load(std::memory_order_relaxed)) leaves = runtime::with_argument_grads(leaves, with_grads);
  if (auto why = eager_reason(leaves)) {
    warn_eager(*why);
    return run_eager(leaves);
  }
  LeafMarks marks;
  const uint64_t* mark_ptr = dynamic_marks(leaves, marks);
  std::string break_failure;
  uint64_t skip = 0;
  ResultLeaves out;  // filled in place: a hit moves no result list
  if (try_entries(leaves, mark_ptr, &break_failure, nullptr, skip, out)) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    return out;
  }
  return compile_and_run(leaves, mark_ptr, break_failure, skip);
}

const uint64_t* Engine::dynamic_marks(c10::ArrayRef<Leaf> leaves, LeafMarks& marks) {
  if (!runtime::any_marks()) return nullptr;  // no tensor was ever marked: skip the registry
  marks.assign(leaves.size(), 0);
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i].kind == Leaf::Kind::kTensor) marks[i] = runtime::marks_of(leaves[i].tensor->unsafeGetTensorImpl()).dynamic;
  return marks.data();
}

std::string Engine::grad_blocked_reason() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return fmt::format(
      "grad mode is on and its training trace failed ({}); calls in grad mode run eagerly, calls under "
      "torch::NoGradGuard or c10::InferenceMode still compile",
      training_failure_);
}

void Engine::warn_eager(const EagerReason& reason) {
  // The trace that finds a captured tensor requiring grad warns with the same flag (after_trace_failure):
  // the calls that follow, refused here, say nothing more.
  std::atomic<bool>& warned = reason.training ? warned_grad_ : warned_input_;
  if (!warned.exchange(true)) runtime::warn(fmt::format("jitc: running '{}' eagerly: {}", name_, reason.text));
}

std::optional<Engine::EagerReason> Engine::eager_reason(c10::ArrayRef<Leaf> leaves) const {
  if (at::GradMode::is_enabled() && grad_blocked_.load(std::memory_order_relaxed)) return EagerReason{grad_blocked_reason(), true};
  for (const auto& leaf : leaves) {
    if (leaf.kind != Leaf::Kind::kTensor) continue;
    const at::Tensor& t = *leaf.tensor;
    if (t.layout() != c10::kStrided)
      return EagerReason{
          fmt::format("argument {} is a {} tensor; jitc compiles strided tensors only", leaf.argument, c10::toString(t.layout())), false};
    if (t.is_conj() || t.is_neg())
      return EagerReason{
          fmt::format("argument {} has a lazy conjugate or negative bit; call resolve_conj()/resolve_neg() first", leaf.argument), false};
  }
  return std::nullopt;
}

ResultLeaves Engine::run_eager(c10::ArrayRef<Leaf> leaves) {
  eager_calls_.fetch_add(1, std::memory_order_relaxed);
  return invoker_(leaves);
}

Engine::EntryPtr Engine::find_entry(c10::ArrayRef<Leaf> leaves, const uint64_t* marks, int64_t* symbols, uint64_t skip, size_t* index,
                                    Unchecked* unchecked, runtime::CapturedTensors& captured) {
  const guards::GlobalState global = runtime::capture_global_state();
  runtime::ModuleWords module;
  if (module_) {
    captured = {};  // a previous attempt's references would count as holders of the module's tensors
    runtime::read_module_state(*module_, module);
  }
  std::shared_lock lock(entries_mutex_);
  const size_t n = entries_.size();
  size_t first = most_recent_.load(std::memory_order_relaxed);
  if (first >= n) first = 0;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = k == 0 ? first : (k <= first ? k - 1 : k);
    if (i < 64 && (skip >> i & 1)) continue;
    const auto& entry = entries_[i];
    captured.lock(*entry);
    if (!guards::check(entry->guards, captured.view(leaves, marks, &global, module), symbols)) continue;
    if (!entry->run_checks.empty() && !runtime::failed_run_check(*entry).empty()) continue;
    if (const int s = entry->graph.num_symbols; s > 0) {
      const auto verdict = entry->sizes.lookup({symbols, static_cast<size_t>(s)});
      if (verdict == runtime::SizeLedger::Verdict::kRejected) continue;
      if (verdict == runtime::SizeLedger::Verdict::kUnknown) {
        if (unchecked &&
            std::none_of(unchecked->candidates.begin(), unchecked->candidates.end(), [&](const auto& c) { return c.entry == entry; }))
          unchecked->candidates.push_back({entry, std::vector<int64_t>(symbols, symbols + s)});
        continue;
      }
    }
    if (i != first) most_recent_.store(i, std::memory_order_relaxed);
    *index = i;
    return entry;
  }
  return nullptr;
}

bool Engine::try_entries(c10::ArrayRef<Leaf> leaves, const uint64_t* marks, std::string* failure, Unchecked* unchecked, uint64_t& skip,
                         ResultLeaves& out) {
  int64_t symbols[kMaxSymbols];
  runtime::CapturedTensors captured;
  for (;;) {
    size_t index = 0;
    EntryPtr entry = find_entry(leaves, marks, symbols, skip, &index, unchecked, captured);
    if (!entry) return false;
    if (entry->checks_first_hit && !entry->first_hit_checked.load(std::memory_order_acquire)) {
      if (unchecked) unchecked->first_hit = entry;  // under the compile lock: check_first_hit
      return false;
    }
    if (run_entry(*entry, captured, leaves, symbols, failure, out)) return true;
    if (index >= 64) return false;
    skip |= 1ull << index;  // a graph break gave another value: another entry may hold it
  }
}

bool Engine::run_entry(const runtime::Entry& entry, const runtime::CapturedTensors& captured, c10::ArrayRef<Leaf> leaves,
                       const int64_t* symbols, std::string* failure, ResultLeaves& out, RunAs as) {
  ValuesLease lease;
  auto& values = lease.get();
  // A program runs its own (functional) graph, whose inputs are the entry graph's, position by position.
  const runtime::Program* program = as == RunAs::kProgram ? program_for(entry) : nullptr;
  // After program_for: a first hit's compile is not part of the call's region.
  const runtime::ProfilerRegion region(at::RecordScope::USER_SCOPE,
                                       [&] { return runtime::compiled_region_name(name_, compile_id(entry.compile_number)); });
  const runtime::NvtxRange range(program ? program->nvtx_range() : nullptr);
  const graph::Graph& g = program ? program->graph() : entry.graph;
  values.resize(g.values.size());
  for (const auto& in : g.inputs)
    if (in.kind == graph::InputKind::kArgument) values[in.value] = *leaves[in.leaf].tensor;
    else if (in.kind == graph::InputKind::kConstant) values[in.value] = in.constant;
  for (size_t k = 0; k < entry.captured_inputs.size(); ++k)  // the tensors the guards checked
    values[g.inputs[entry.captured_inputs[k]].value] = at::Tensor(captured.refs[k]);
  if (as == RunAs::kReplayToRaise) copy_written_inputs(g, values);
  std::vector<std::pair<at::Tensor, at::Tensor>> backups;
  for (size_t position : entry.backup_inputs) {
    const at::Tensor& t = values[g.inputs[position].value];
    backups.emplace_back(t, t.clone());
  }
  at::Generator generator;
  at::Tensor generator_state;
  if (entry.draws_before_break || (program && program->draws_and_checks())) {
    generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator_state = generator.get_state();
  }
  std::string why;
  bool completed = false;
  try {
    auto run = [&] {
      const bool replayed = program && entry.cuda_graphs && entry.cuda_graphs->run(values, symbols);
      return replayed || (program ? program->run(values, symbols, &why) : runtime::replay(entry.graph, {&values, symbols}, &why));
    };
    completed = entry.backward ? runtime::run_training(entry, g, values, run, name_, symbols) : run();
  } catch (const runtime::ChecksFailed& failed) {
    runtime::log(runtime::Artifact::kPerfHints,
                 fmt::format("{}: a run-time check of kernel {} failed (an index out of range or a division by "
                             "zero): the call runs through eager replay, which raises eager's error",
                             compile_id(entry.compile_number), failed.kernel));
    values.clear();
    restore_generator(generator, generator_state);
    return run_entry(entry, captured, leaves, symbols, failure, out, RunAs::kReplayToRaise);
  }
  if (as == RunAs::kReplayToRaise)
    throw c10::Error(
        fmt::format("jitc: {}: a run-time check of a compiled kernel failed (an index out of range or an integer division by "
                    "zero) but the call replayed eagerly did not raise: the call changed its own inputs before the check",
                    compile_id(entry.compile_number)));
  if (!completed) {
    for (auto it = backups.rbegin(); it != backups.rend(); ++it) it->first.copy_(it->second);
    restore_generator(generator, generator_state);
    *failure = fmt::format("{}: graph break: {}", compile_id(entry.compile_number), why);
    return false;
  }
  out.resize(entry.result.size());
  for (size_t k = 0; k < entry.result.size(); ++k) {
    const auto& slot = entry.result[k];
    out[k].kind = slot.kind;
    if (slot.kind == ResultLeaf::Kind::kTensor) {
      if (slot.value != graph::kNoValue) out[k].tensor = values[program ? program->graph().outputs[k] : slot.value];
    } else {
      out[k].d = slot.d;
      out[k].i = slot.i.eval(symbols);
    }
  }
  return true;
}

ResultLeaves Engine::run_after_training_trace(c10::ArrayRef<Leaf> leaves, const uint64_t* marks) {
  int64_t symbols[kMaxSymbols];
  runtime::CapturedTensors captured;
  size_t index = 0;
  std::string failure;
  ResultLeaves out;
  if (EntryPtr entry = find_entry(leaves, marks, symbols, 0, &index, nullptr, captured);
      entry && entry->backward && run_entry(*entry, captured, leaves, symbols, &failure, out, RunAs::kReplay))
    return out;
  return invoker_(leaves);
}

ResultLeaves Engine::replay_fresh_training_entry(const runtime::Entry& fresh, c10::ArrayRef<Leaf> leaves) {
  runtime::CapturedTensors captured;
  captured.lock(fresh);
  const int64_t no_symbols[1] = {0};
  std::string failure;
  ResultLeaves out;
  if (run_entry(fresh, captured, leaves, no_symbols, &failure, out, RunAs::kReplay)) return out;
  return invoker_(leaves);
}

bool Engine::expects_training() const {
  if (captures_need_grad_.load(std::memory_order_relaxed)) return true;
  return module_ && runtime::any_parameter_requires_grad(*module_);
}

std::string Engine::compile_id(int compile_number) const { return fmt::format("{}/{}", frame_id_, compile_number); }

Stats Engine::stats() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  Stats s = compile_stats_;
  s.calls = calls_.load();
  s.hits = hits_.load();
  s.eager_fallbacks = eager_calls_.load();
  s.first_hit_checks = first_hit_checks_.load();
  s.kernels_compiled = kernels_compiled_.load();
  s.programs_compiled = programs_compiled_.load();
  s.programs_from_cache = programs_from_cache_.load();
  s.cudagraph_captures = cuda_graph_counters_.captures.load();
  s.cudagraph_replays = cuda_graph_counters_.replays.load();
  std::shared_lock entries(entries_mutex_);
  s.entries = static_cast<int64_t>(entries_.size());
  return s;
}

void Engine::reset() {
  if (tracer::is_tracing())
    throw UnsupportedError(
        "jitc::reset() was called inside a compiled callable while it was traced; call it "
        "outside compiled code");
  std::lock_guard<std::mutex> compile(compile_mutex_);
  wait_for_background_builds();
  {
    std::unique_lock lock(entries_mutex_);
    entries_.clear();
    most_recent_.store(0);
  }
  history_.clear();
  next_compile_number_ = 0;
  calls_ = hits_ = eager_calls_ = first_hit_checks_ = 0;
  retraced_unreplayable_ = captures_need_grad_ = false;
  kernels_compiled_ = programs_compiled_ = programs_from_cache_ = 0;
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    compile_stats_ = Stats{};
  }
  eager_only_ = false;
  grad_blocked_ = false;
  warned_limit_ = warned_grad_ = warned_input_ = false;
}

}  // namespace jitc::detail
