// Entry: one compiled version of a function, valid where its guards pass (a cache entry in Dynamo's
// terms). Immutable once built; calls share it through shared_ptr.
#pragma once
#include "graph/generalize.h"
#include "graph/graph.h"
#include "guards/guard_set.h"
#include "tracer/trace_session.h"

#include <jitc/detail/leaves.h>

#include <c10/util/SmallVector.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace jitc::runtime {

class Program;
class CudaGraphs;

struct ResultSlot {
  detail::ResultLeaf::Kind kind = detail::ResultLeaf::Kind::kTensor;
  graph::ValueId value = graph::kNoValue;  // tensors
  double d = 0;                            // kDouble
  graph::SymExpr i;                        // kInt / kBool (may depend on symbolic sizes)
};

// The symbol values a symbolic entry has been checked against. Two traces can fit integers that do not
// hold at other sizes (x.size(0) / 2 is 1 at sizes 2 and 3), so an entry serves a size only after that
// size's own trace produced the same symbolic graph; a size whose trace differs is rejected and gets a
// static entry of its own. Kernels compiled for the entry are reused either way.
class SizeLedger {
 public:
  enum class Verdict { kUnknown, kAccepted, kRejected };
  Verdict lookup(c10::ArrayRef<int64_t> symbols) const;
  void record(c10::ArrayRef<int64_t> symbols, bool accepted);

 private:
  struct Less {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
    }
  };
  mutable std::shared_mutex mutex_;
  std::map<std::vector<int64_t>, bool, Less> verdicts_;
};

struct Entry;

// What makes an entry a training entry (graph/partition.h): its graph is the forward graph, whose outputs
// are the callable's followed by `saved` values; the backward entry's graph takes the saved values and one
// tangent per differentiable output, and returns the gradients of the forward inputs `grad_inputs`.
struct BackwardPart {
  std::shared_ptr<Entry> entry;     // no guards: it runs when autograd calls the forward's node
  std::vector<size_t> outputs;      // result leaves that are differentiable, in tangent order
  std::vector<size_t> grad_inputs;  // forward graph input positions, in gradient order
  size_t saved = 0;
  // Saved values that are forward inputs: (saved index, input position). Their versions are taken before
  // the forward runs (training.cpp).
  std::vector<std::pair<size_t, size_t>> saved_inputs;
  // Saved values laid out channels-last, in the forward's outputs and the backward's inputs
  // (inductor/channels_last.h).
  std::vector<size_t> channels_last_saved;

  // The same outputs, gradients and saved values (the graphs aside): two traces' parts may generalize.
  bool same_layout(const BackwardPart& other) const {
    return outputs == other.outputs && grad_inputs == other.grad_inputs && saved == other.saved && saved_inputs == other.saved_inputs &&
           channels_last_saved == other.channels_last_saved;
  }
};

// Made with std::make_shared only: a build in the background holds its entry (shared_from_this).
struct Entry : std::enable_shared_from_this<Entry> {
  int compile_number = 0;                        // the N of Dynamo's compile id [frame/N]
  std::string part;                              // "" or "backward": names the program ("<function>_<N>_backward")
  std::shared_ptr<const BackwardPart> backward;  // set for a training entry
  guards::GuardSet guards;
  graph::Graph graph;   // what runs (after DCE and CSE)
  graph::Graph traced;  // as recorded: the partner for a later generalization
  std::vector<ResultSlot> result;
  std::vector<size_t> captured_inputs;           // graph input positions of captured tensors, guard order
  std::vector<std::vector<int64_t>> leaf_sizes;  // sizes of each tensor leaf when traced
  std::vector<tracer::BreakRecord> breaks;
  std::vector<tracer::RunCheck> run_checks;  // the trace's guards on C++ state, run before each run (find_entry)
  double trace_seconds = 0;                  // tracing the call that made it and building it (JITC_LOGS=compile_times)
  // Inputs written before a graph break: copied before a replay so that a failed break check can undo
  // the writes before the call is traced again.
  std::vector<size_t> backup_inputs;
  // RNG ops run before a graph break: the CPU generator's state is saved too, so that a failed break
  // check does not leave extra draws behind (eager draws once per call).
  bool draws_before_break = false;
  // A static entry without backward that writes captured tensors (an optimizer's step, running statistics,
  // a cache): its first hit traces the call again (first_hit.cpp), since a C++ value the callable read (an
  // optimizer's step count, a learning rate schedule's) may change from call to call unseen by the guards.
  bool checks_first_hit = false;
  mutable std::atomic<bool> first_hit_checked{false};
  // A symbolic entry: the two static entries it was generalized from, and the sizes checked so far.
  std::shared_ptr<const Entry> first, second;
  graph::SymbolValues symbol_values;  // each symbol's size in `first` and in `second`
  mutable SizeLedger sizes;
  // backend=inductor: the compiled program, built from the trace on (Engine::request_build) or at the
  // entry's first hit (max-autotune), null where it failed: eager replay. Traces that only check sizes
  // never compile kernels; a static entry replaced by a symbolic one stops building (`superseded`).
  mutable std::once_flag program_once;
  mutable std::shared_ptr<const Program> program;
  mutable std::atomic<bool> program_built{false};      // set after program_once ran: hits skip call_once
  mutable std::atomic<bool> program_requested{false};  // a build in the background was started
  // Replaced by a symbolic entry: a build started at its trace (Engine::request_build) stops before its
  // kernels compile. Such an entry is not run again, but by a call that found it just before (through
  // eager replay if its build stopped). A reset or destroyed function's builds complete (and are cached).
  mutable std::atomic<bool> superseded{false};
  // mode=reduce-overhead: the program's CUDA graphs (null in other modes or without a program).
  mutable std::shared_ptr<CudaGraphs> cuda_graphs;
};

// The same result leaves (kinds, scalar values).
bool same_results(const Entry& a, const Entry& b);
// The same graphs (forward and backward), results and backward layout: one program serves both.
bool same_program(const Entry& a, const Entry& b);
// Runs the entry's run checks (Entry::run_checks): the first one's reason why the entry no longer
// stands, or "" (a check that throws fails, with its message).
std::string failed_run_check(const Entry& entry);

// Marks the entry and its backward superseded (Entry::superseded).
inline void supersede(const Entry& entry) {
  entry.superseded.store(true, std::memory_order_relaxed);
  if (entry.backward) entry.backward->entry->superseded.store(true, std::memory_order_relaxed);
}

// The entry's captured tensors, locked for one call (null where a tensor was freed), in guard order.
struct CapturedTensors {
  c10::SmallVector<c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>, 8> refs;
  c10::SmallVector<const c10::TensorImpl*, 8> raw;
  void lock(const Entry& entry);
  guards::CallView view(c10::ArrayRef<detail::Leaf> leaves, const uint64_t* marks, const guards::GlobalState* global,
                        c10::ArrayRef<uintptr_t> module = {}) const {
    return {leaves, raw.data(), raw.size(), marks, global, module};
  }
};

// Builds the guards of a graph traced on `leaves` (marks: per leaf, dims that may be dynamic;
// scalar_symbols: per leaf, the symbol a dynamic int or double argument binds, or -1; empty: none).
guards::GuardSet build_guards(const graph::Graph& graph, c10::ArrayRef<detail::Leaf> leaves, const std::vector<std::string>& leaf_names,
                              const std::vector<uint64_t>& dynamic_dims, const std::vector<std::pair<int64_t, int64_t>>& symbol_ranges,
                              const std::vector<int>& scalar_symbols = {});

}  // namespace jitc::runtime
