// TraceSession: the state of one trace on one thread. The dispatcher fallback hands it every op; it
// unwraps tracer arguments to their shadows, runs the real kernel, records a node and wraps the results.
// Real tensors reaching an op (captured module parameters, closures) become graph inputs.
#pragma once
#include "graph/graph.h"
#include "tracer/tracer_tensor.h"

#include <ATen/core/stack.h>
#include <c10/core/StorageImpl.h>

#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace jitc::tracer {

struct BreakRecord {
  std::string op;           // aten::_local_scalar_dense
  std::string reason;       // Dynamo's "Graph Break Reason"
  std::string explanation;  // Dynamo's "Explanation"
};

// Why a trace could not produce a graph. The engine restores mutated inputs and runs eagerly.
class TraceFailure : public std::exception {
 public:
  // kGradRequired: an inference trace met a captured tensor requiring grad (trace() then traces for
  // training). kTrainingUnsupported: a training trace met what jitc cannot differentiate yet.
  // kArgumentGrad: the callable read an argument's .grad() (the engine then passes the arguments'
  // gradients as leaves of their own, runtime/argument_grads.h, and traces again).
  // kBackwardReadsHost: a training trace's backward read a value on the host (trace() then traces again
  // with subclass-like stand-ins, or fails as kTrainingUnsupported).
  enum class Kind { kUntraceable, kGradRequired, kTrainingUnsupported, kFullGraph, kEscapedTracer, kArgumentGrad, kBackwardReadsHost };
  TraceFailure(Kind kind, std::string message) : kind_(kind), message_(std::move(message)) {}
  Kind kind() const { return kind_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  Kind kind_;
  std::string message_;
};

// Run before each run of an entry made from a trace that registered it (add_run_check): it brings host
// state that the graph reads through captured tensors up to date (an optimizer's learning-rate tensor,
// whose group options a replay would not read), and returns why the entry no longer stands ("" where it
// does): a guard on C++ state the tracer cannot see. Calls of one compiled function on several threads
// may run an entry's checks at once.
using RunCheck = std::function<std::string()>;

class TraceSession {
 public:
  // training: grad mode is on and tensors may require grad; autograd runs above the tracer and its
  // backward formulas are recorded too (backward_trace.h).
  // subclass_like: stand-ins for which ATen's isTensorSubclassLike holds (tracer_tensor.cpp).
  TraceSession(bool fullgraph, bool training, bool subclass_like = false);
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  static TraceSession* current();
  // The session an op reaching the tracer on a thread without one records into: autograd's device threads
  // run a backward() called inside the callable on CUDA tensors, with the trace's dispatch keys. The session
  // of a stand-in among the op's arguments, else the only trace running in the process; null if none is.
  static TraceSession* for_foreign_thread(const torch::jit::Stack& stack, size_t begin);
  // This thread records into `session` for the scope (for_foreign_thread's).
  class Adopt {
   public:
    explicit Adopt(TraceSession* session);
    ~Adopt();
    Adopt(const Adopt&) = delete;
    Adopt& operator=(const Adopt&) = delete;

   private:
    TraceSession* previous_;
  };

  // Puts back the metadata of captured tensors whose data the callable replaced (Tensor::set_data, which
  // Module::to calls and the dispatcher does not see: the tensor would keep a stand-in's). Whether any was.
  bool restore_replaced_captures();
  // Puts back the gradients of captured tensors that the callable replaced or reset (a module's zero_grad
  // setting them to none: autograd's field, which no replay would change) and drops the references kept
  // for that; the first such tensor's name, or "". `restore` false: only names it (the trace is kept as
  // the call's execution, its new gradients included).
  std::string restore_replaced_captured_grads(bool restore = true);
  uint64_t id() const { return id_; }

  at::Tensor wrap_argument(const at::Tensor& real, int leaf, std::string name);
  void record(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack);

  // Maps a result tensor to its graph value and replaces it with the real tensor for the user.
  graph::ValueId bind_output(at::Tensor& result);

  // Training traces (backward_trace.cpp). A tangent: a graph input standing for the gradient of an output
  // (contiguous, as the compiled backward gets it). The graph value of a tensor the trace handled, and the
  // input position of an argument's stand-in or a captured tensor (-1: neither).
  at::Tensor wrap_tangent(const at::Tensor& output_shadow, size_t index, size_t* position);
  graph::ValueId value_of_tensor(const at::Tensor& t) { return value_of(t); }
  int input_position(const c10::TensorImpl* leaf) const;
  size_t node_count() const { return graph_.nodes.size(); }
  bool training() const { return training_; }

  // Undo writes the trace made to arguments and captured tensors (before an eager re-run).
  void restore_mutated_inputs();

  // Ends the trace: captured tensors nobody else holds become constants owned by the graph.
  graph::Graph finish();
  // Set by finish() when the graph must not be replayed (the trace's own result is still right).
  const std::string& unreplayable_reason() const { return unreplayable_; }
  const std::vector<BreakRecord>& breaks() const { return breaks_; }
  void add_run_check(RunCheck check) { run_checks_.push_back(std::move(check)); }
  std::vector<RunCheck> take_run_checks() { return std::move(run_checks_); }

 private:
  graph::ValueId value_of(const at::Tensor& t);
  void stand_in_for_grad(const at::Tensor& real, at::Tensor& tracer);
  graph::ValueId captured_value(const at::Tensor& real);
  graph::ValueId define(const at::Tensor& real, int32_t producer);
  int32_t storage_id(const at::Tensor& real);
  graph::Arg record_arg(c10::IValue& v);
  void before_write(graph::ValueId target);
  void wrap_returns(const c10::OperatorHandle& op, torch::jit::Stack* stack, size_t begin, const std::vector<c10::IValue>& originals,
                    graph::Node& node);
  void note_break(graph::Node& node, const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t begin);

  uint64_t id_;
  // One op recorded at a time: the caller's thread and autograd's device threads may both record while a
  // backward() inside the callable runs.
  std::recursive_mutex record_mutex_;
  bool fullgraph_;
  bool training_;
  bool subclass_like_;
  TraceSession* previous_;
  graph::Graph graph_;
  std::vector<BreakRecord> breaks_;
  std::unordered_map<const c10::TensorImpl*, graph::ValueId> captured_current_;  // latest version
  std::vector<std::pair<size_t, at::Tensor>> captured_tensors_;                  // (input position, tensor)
  // (captured tensor, its metadata when first seen); weak: finish() tells tensors only the trace holds by
  // their use count
  std::vector<std::pair<c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>, at::Tensor>> captured_as_seen_;
  std::unordered_map<size_t, at::Tensor> borrowed_snapshots_;  // input position -> copy made when first seen
  struct CapturedGrad {  // a captured tensor requiring grad, its gradient when first seen, its input's name
    c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> tensor;
    at::Tensor grad;
    std::string name;
  };
  std::vector<CapturedGrad> captured_grads_;
  std::unordered_map<const c10::TensorImpl*, int> input_positions_;         // stand-ins and captured tensors
  std::unordered_map<const c10::TensorImpl*, std::string> argument_grads_;  // stand-ins of arguments' .grad()
  std::unordered_map<const c10::StorageImpl*, int32_t> storage_ids_;
  std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>> storage_owners_;   // keep addresses unique
  std::unordered_map<int32_t, std::vector<at::Tensor>> inputs_by_storage_;  // arguments and captured
  std::vector<std::pair<at::Tensor, at::Tensor>> backups_;                  // (input, copy before write)
  std::vector<int32_t> backed_up_storages_;
  std::string unreplayable_;
  std::vector<RunCheck> run_checks_;
};

// Whether `op`, called with the arguments stack[begin...], needs a graph break: a result that depends on
// tensor data (a value read on the host, a shape that follows the data).
bool is_data_dependent(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t begin);

}  // namespace jitc::tracer
