// Engine: the state behind one CompiledFunction. A call checks the entries' guards (most recently hit
// first) and replays the entry that passes; a miss traces the call again (compile.cpp), up to the
// recompile limit, after which misses run eagerly (Dynamo's RUN_ONLY).
#pragma once
#include "guards/recompile_policy.h"
#include "runtime/cuda_graphs.h"
#include "runtime/entry.h"
#include "tracer/trace.h"

#include <jitc/compiled_function.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <source_location>
#include <string>
#include <vector>

namespace jitc::detail {

class Engine {
 public:
  Engine(Invoker invoker, Options options, int num_arguments, std::source_location where, std::shared_ptr<torch::nn::Module> module);
  ~Engine();  // after the builds running in the background
  void wait_for_background_builds();

  ResultLeaves call(c10::ArrayRef<Leaf> leaves);
  ExplainOutput explain(c10::ArrayRef<Leaf> leaves);
  Stats stats() const;
  const std::string& name() const { return name_; }
  void reset();

 private:
  using EntryPtr = std::shared_ptr<const runtime::Entry>;
  static constexpr int kMaxSymbols = 16;

  // The symbolic entries whose guards pass for symbol values they have not been checked against yet,
  // in the order tried (a C++ branch on a scalar can give two symbolic entries whose guards both pass:
  // the one trace is checked against each).
  struct Unchecked {
    struct Candidate {
      EntryPtr entry;
      std::vector<int64_t> symbols;
    };
    std::vector<Candidate> candidates;
    EntryPtr first_hit;  // an entry whose first hit traces again (Entry::checks_first_hit)
  };

  void validate_options() const;
  // Per leaf, the dims marked dynamic on the tensor (bit d = dim d); nullptr when nothing was ever marked.
  using LeafMarks = c10::SmallVector<uint64_t, 16>;
  static const uint64_t* dynamic_marks(c10::ArrayRef<Leaf> leaves, LeafMarks& marks);

  // ---- hit path (engine.cpp) ----
  // Runs the first entry whose guards pass and whose graph breaks hold. `unchecked` receives a
  // symbolic entry that would serve these sizes once checked (compile.cpp does that).
  // Bit i of `skip` skips entries_[i]; entries whose graph break failed are added to it, so that a
  // second attempt (under the compile lock) does not run them again.
  bool try_entries(c10::ArrayRef<Leaf> leaves, const uint64_t* marks, std::string* failure, Unchecked* unchecked, uint64_t& skip,
                   ResultLeaves& out);
  // Entries are tried most recently hit first. On success `captured` holds the entry's captured
  // tensors, locked for the whole call.
  EntryPtr find_entry(c10::ArrayRef<Leaf> leaves, const uint64_t* marks, int64_t* symbols, uint64_t skip, size_t* index,
                      Unchecked* unchecked, runtime::CapturedTensors& captured);
  // How run_entry runs an entry: its program where built (else eager replay); eager replay (the call
  // that traced it); eager replay after a failed run-time check of the program (see
  // runtime::ChecksFailed), to raise eager's error, on copies of the inputs the graph writes, which the
  // program wrote already.
  enum class RunAs { kProgram, kReplay, kReplayToRaise };
  // Runs a guard-checked entry into `out`; false (out untouched) when a graph break's check failed.
  bool run_entry(const runtime::Entry& entry, const runtime::CapturedTensors& captured, c10::ArrayRef<Leaf> leaves, const int64_t* symbols,
                 std::string* failure, ResultLeaves& out, RunAs as = RunAs::kProgram);
  // The call whose training trace just made an entry (the trace's tensors have no autograd history):
  // runs through that entry's replay rather than the callable again, whose C++ side effects (a counter,
  // a log line) ran once already in the trace. The callable again only where no entry serves the call.
  ResultLeaves run_after_training_trace(c10::ArrayRef<Leaf> leaves, const uint64_t* marks);
  // The same for an entry that is not installed (the first-hit check's): replayed once over these leaves.
  ResultLeaves replay_fresh_training_entry(const runtime::Entry& fresh, c10::ArrayRef<Leaf> leaves);
  // A training entry whose first-hit check passed, run as a hit; nullopt where a graph break stopped it.
  std::optional<ResultLeaves> run_checked_training_entry(const runtime::Entry& entry, c10::ArrayRef<Leaf> leaves);
  // In grad mode the next trace is for training at once: an earlier one found a captured tensor requiring
  // grad, or the compiled module has a parameter requiring grad.
  bool expects_training() const;
  // Why this call runs eagerly (an input jitc does not compile, a call in grad mode after a failed
  // training trace).
  struct EagerReason {
    std::string text;
    bool training;  // warned about once per function
  };
  std::optional<EagerReason> eager_reason(c10::ArrayRef<Leaf> leaves) const;
  void warn_eager(const EagerReason& reason);
  // The one wording of the grad-mode fallback after a training trace failed (training_failure_ says why).
  std::string grad_blocked_reason() const;
  // ---- code generation (codegen.cpp) ----
  // The entry's compiled program under backend=inductor (built once, on first use); null = eager replay.
  // In the background (builds_in_background): null until the build on a thread of its own is done, the
  // calls meanwhile running through eager replay, as issue 25 asks: no call stalls on code generation.
  const runtime::Program* program_for(const runtime::Entry& entry);
  void build_once(const runtime::Entry& entry);
  bool builds_in_background() const;
  void start_background_build(const runtime::Entry& entry);
  void request_build(const runtime::Entry& entry);        // at install: the build starts before the first hit
  void build_in_background(const runtime::Entry& entry);  // on the build's thread: build_once, errors warned
  std::shared_ptr<const runtime::Program> build_program(const runtime::Entry& entry);
  // A call after its count: through the entries, compiling on a miss, or eagerly.
  ResultLeaves dispatch(c10::ArrayRef<Leaf> leaves);
  ResultLeaves run_eager(c10::ArrayRef<Leaf> leaves);

  // ---- miss path (compile.cpp) ----
  ResultLeaves compile_and_run(c10::ArrayRef<Leaf> leaves, const uint64_t* marks, const std::string& break_failure, uint64_t skip);
  ResultLeaves check_sizes_and_run(const Unchecked& unchecked, c10::ArrayRef<Leaf> leaves, const uint64_t* marks,
                                   std::unique_lock<std::mutex>& compile);
  // Whether `fresh` (a static entry of this call) generalizes with one of symbolic's origins to symbolic's program.
  bool follows(const runtime::Entry& symbolic, const EntryPtr& fresh, c10::ArrayRef<Leaf> leaves, const std::vector<uint64_t>& candidates);
  // Traces the call; on failure runs it eagerly (and returns false with `eager` set) or throws.
  bool trace_call(c10::ArrayRef<Leaf> leaves, std::unique_lock<std::mutex>& compile, tracer::TraceOutcome& outcome, ResultLeaves& eager);
  std::vector<std::string> failure_reasons(c10::ArrayRef<Leaf> leaves, const uint64_t* marks) const;
  ResultLeaves at_recompile_limit(c10::ArrayRef<Leaf> leaves, const std::vector<std::string>& reasons, const std::string& id);
  // Builds and installs an entry from a finished trace. Any error here is a jitc bug: the call still
  // returns the trace's (correct) result and the function runs eagerly from then on.
  // `started`: when the trace began (the entry's trace_seconds).
  void add_entry(tracer::TraceOutcome& outcome, c10::ArrayRef<Leaf> leaves, const std::vector<uint64_t>& candidates, int number,
                 std::chrono::steady_clock::time_point started);
  ResultLeaves after_trace_failure(c10::ArrayRef<Leaf> leaves, const std::exception& failure, bool training);
  // A trace kept as its call's execution (TraceOutcome::unreplayable): calls run eagerly from then on (in
  // grad mode only, after a training trace), but for one more trace where a first call's state was the cause.
  void after_unreplayable_trace(const tracer::TraceOutcome& outcome);
  // first_hit.cpp: the first hit of an entry that updates captured tensors traces the call again; the
  // entry stays only if that trace gives the same graph over the same tensors.
  ResultLeaves check_first_hit(const EntryPtr& entry, c10::ArrayRef<Leaf> leaves, std::unique_lock<std::mutex>& compile);
  void block_after(const std::string& reason, bool training);
  std::vector<uint64_t> dynamic_candidates(c10::ArrayRef<Leaf> leaves);
  uint64_t scalar_candidate(c10::ArrayRef<Leaf> leaves, size_t leaf, const std::string& name);
  bool scalar_symbols_of(const guards::GuardSet& a, const guards::GuardSet& b, const std::vector<uint64_t>& candidates,
                         graph::SymbolValues& values, std::vector<std::pair<int64_t, int64_t>>& ranges,
                         std::vector<int>& scalar_symbols) const;
  std::vector<std::string> leaf_names(c10::ArrayRef<Leaf> leaves) const;
  std::shared_ptr<runtime::Entry> make_entry(graph::Graph traced, c10::ArrayRef<Leaf> leaves, const ResultLeaves& result,
                                             const std::vector<uint64_t>& dynamic_dims,
                                             const std::vector<std::pair<int64_t, int64_t>>& ranges,
                                             const std::vector<int>& scalar_symbols = {});
  // A training trace's entry: its joint graph split into the forward (the entry's graph) and the backward
  // (training_entry.cpp).
  std::shared_ptr<runtime::Entry> make_training_entry(const tracer::TraceOutcome& outcome, c10::ArrayRef<Leaf> leaves,
                                                      const std::vector<uint64_t>& dynamic_dims);
  // The backward part of the symbolic entry generalized from training entries a and b (nullptr: their
  // backward graphs do not generalize, and the sizes stay static).
  std::shared_ptr<const runtime::BackwardPart> generalized_backward(const runtime::Entry& a, const runtime::Entry& b,
                                                                    const graph::SymbolValues& values) const;
  std::shared_ptr<runtime::Entry> generalized(const EntryPtr& partner, const EntryPtr& fresh, c10::ArrayRef<Leaf> leaves,
                                              const std::vector<uint64_t>& candidates);
  // Installs `entry`, or the symbolic entry it generalizes to with an installed one (superseding that);
  // returns the entry installed.
  EntryPtr install(std::shared_ptr<runtime::Entry> entry, c10::ArrayRef<Leaf> leaves, const std::vector<uint64_t>& candidates);
  void log_entry(const runtime::Entry& entry) const;
  std::string compile_id(int compile_number) const;
  std::pair<int64_t, int64_t> mark_range(c10::ArrayRef<Leaf> leaves, size_t leaf, int dim) const;

  Invoker invoker_;
  Options options_;
  std::shared_ptr<torch::nn::Module> module_;  // a compiled module: its state is guarded (module_state.h)
  int num_arguments_;
  std::string where_;
  std::string name_;
  int frame_id_;

  mutable std::shared_mutex entries_mutex_;
  std::vector<EntryPtr> entries_;
  std::atomic<size_t> most_recent_{0};

  std::mutex compile_mutex_;    // one trace at a time per function; hits go on meanwhile
  guards::DimHistory history_;  // automatic dynamic: sizes seen per leaf
  int next_compile_number_ = 0;

  std::atomic<int64_t> calls_{0}, hits_{0}, eager_calls_{0};
  mutable std::mutex stats_mutex_;
  Stats compile_stats_;  // compiles, recompiles, reasons, breaks, compile time

  std::atomic<bool> eager_only_{false};
  std::atomic<bool> grad_blocked_{false};          // a training trace failed: calls in grad mode run eagerly
  std::atomic<bool> reads_argument_grads_{false};  // calls pass their arguments' gradients (argument_grads.h)
  std::string training_failure_;                   // why (under stats_mutex_)
  std::atomic<bool> warned_limit_{false}, warned_grad_{false}, warned_input_{false};
  std::atomic<bool> retraced_unreplayable_{false};  // after_unreplayable_trace's one more trace was given
  std::atomic<bool> captures_need_grad_{false};     // a trace found a captured tensor requiring grad
  std::atomic<int64_t> first_hit_checks_{0};
  std::atomic<int64_t> kernels_compiled_{0}, programs_compiled_{0}, programs_from_cache_{0};
  runtime::CudaGraphCounters cuda_graph_counters_;

  // Builds running in the background: reset() and the destructor wait for them (they read the entries).
  std::mutex background_mutex_;
  std::condition_variable background_done_;
  int background_builds_ = 0;
};

}  // namespace jitc::detail
