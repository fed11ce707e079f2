#include "tracer/trace.h"
#include "tracer/generator_states.h"

#include <ATen/core/grad_mode.h>

#include <jitc/detail/internal_assert.h>
#include <jitc/errors.h>

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <fmt/format.h>
#include <torch/library.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>

namespace jitc::tracer {

namespace {

void trace_fallback(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  c10::impl::ExcludeDispatchKeyGuard no_reentry(kTracerKey);
  TraceSession* session = TraceSession::current();
  std::optional<TraceSession::Adopt> adopted;  // an autograd device thread running a backward of the trace
  if (!session && (session = TraceSession::for_foreign_thread(*stack, stack->size() - op.schema().arguments().size())))
    adopted.emplace(session);
  if (!session)
    throw UnsupportedError("jitc: " + op.operator_name().name +
                           " was called on a tensor created while jitc traced a callable, after the trace "
                           "ended. Return tensors from the compiled callable instead of storing them elsewhere.");
  session->record(op, keys, stack);
}

// Stand-ins for the tensor leaves; the same tensor object passed twice gets the same stand-in, so code
// comparing identities (a.is_same(b)) sees what eager sees. An argument's gradient passed as a leaf of its
// own (runtime/argument_grads.h) becomes its owner's stand-in's gradient. `grads`: each stand-in's gradient
// when the callable starts, which it must leave in place.
struct StandIns {
  std::vector<at::Tensor> tracers;
  std::vector<detail::Leaf> leaves;
  std::vector<std::pair<size_t, c10::TensorImpl*>> grads;  // leaf, its stand-in's gradient
};

StandIns make_stand_ins(TraceSession& session, c10::ArrayRef<detail::Leaf> leaves, const std::vector<std::string>& names) {
  StandIns s;
  s.tracers.reserve(leaves.size());
  s.leaves.assign(leaves.begin(), leaves.end());
  std::unordered_map<const c10::TensorImpl*, size_t> seen;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (leaves[i].kind != detail::Leaf::Kind::kTensor) continue;
    const at::Tensor& real = *leaves[i].tensor;
    auto [it, added] = seen.emplace(real.unsafeGetTensorImpl(), s.tracers.size());
    if (added) s.tracers.push_back(session.wrap_argument(real, static_cast<int>(i), names[i]));
    s.leaves[i].tensor = &s.tracers[it->second];
    if (leaves[i].argument < 0) const_cast<at::Tensor*>(s.leaves[leaves[i].i].tensor)->mutable_grad() = s.tracers[it->second];
  }
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i].kind == detail::Leaf::Kind::kTensor) s.grads.emplace_back(i, s.leaves[i].tensor->grad().unsafeGetTensorImpl());
  return s;
}

std::string grad_replaced(const std::string& name) {
  return fmt::format(
      "the callable replaces or resets {}.grad() (mutable_grad() or a zero_grad that sets it to none), which a "
      "compiled replay would not do; zero it in place (grad().zero_(), zero_grad(false)) instead",
      name);
}

// An argument's gradient that the callable replaced or reset (mutable_grad(), a zero_grad setting it to
// none): eager changes the caller's tensor's field; a replay of the graph would not.
void check_grads_kept(const StandIns& s, const std::vector<std::string>& names) {
  for (const auto& [leaf, grad] : s.grads)
    if (s.leaves[leaf].tensor->grad().unsafeGetTensorImpl() != grad)
      throw TraceFailure(TraceFailure::Kind::kUntraceable, grad_replaced(names[leaf]));
}

// Tracer tensors have no data: C++ code that reads or writes a tensor's memory itself (data_ptr,
// at::tensor or from_blob of a C++ array, accessor) fails inside the trace with a message about storage
// that names neither the cause nor the fix.
std::string with_hint(std::string message) {
  if (message.find("doesn't have storage") == std::string::npos) return message;
  return message +
         " (the callable reads or writes a tensor's memory in C++, as data_ptr, accessor and at::tensor of a C++ "
         "array do, which a trace cannot follow: make such tensors outside the compiled function and pass them "
         "as arguments)";
}

// A training call whose results need no gradient (a whole training step: its backward and optimizer ran
// inside) and that created or reset a captured tensor's gradient: its trace is kept as the call's execution.
std::string grad_created(const std::string& name) {
  return fmt::format(
      "the callable creates, replaces or resets {}.grad() (a first backward, mutable_grad() or a zero_grad that sets it to "
      "none), which a replay would not do",
      name);
}

bool any_result_requires_grad(const detail::ResultLeaves& result) {
  return std::any_of(result.begin(), result.end(), [](const detail::ResultLeaf& l) {
    return l.kind == detail::ResultLeaf::Kind::kTensor && l.tensor.defined() && l.tensor.requires_grad();
  });
}

constexpr const char* kKeptStandIns =
    "the callable keeps tensors it computed beyond the call (in an optimizer's state, a member or a global), which a "
    "replay could not update; torch::optim's step is one such callable";

constexpr const char* kReplacedData =
    "the callable replaces a captured tensor's data (Tensor::set_data, which Module::to calls for every parameter): convert "
    "modules (to, double, cuda, ...) before calling the compiled function, not inside it";

// What an exception during a trace means for the caller. A captured tensor whose data the callable replaced
// is the cause of whatever failed after it (a stand-in inside a parameter): it is put back and named.
[[noreturn]] void rethrow_as_failure(TraceSession& session) {
  session.restore_mutated_inputs();
  session.restore_replaced_captured_grads();
  if (session.restore_replaced_captures()) throw TraceFailure(TraceFailure::Kind::kUntraceable, kReplacedData);
  try {
    throw;
  } catch (const TraceFailure&) {
    throw;
  } catch (const jitc::Error&) {
    throw;
  } catch (const c10::Error& e) {  // its what() carries a C++ backtrace: the warning wants the message only
    throw TraceFailure(TraceFailure::Kind::kUntraceable, with_hint(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw TraceFailure(TraceFailure::Kind::kUntraceable, e.what());
  }
}

}  // namespace

void install_tracer() {
  static std::once_flag once;
  std::call_once(once, [] {
    static auto* library = new torch::Library(torch::Library::IMPL, "_", kTracerKey, __FILE__, __LINE__);
    library->fallback(torch::CppFunction::makeFromBoxedFunction<&trace_fallback>());
  });
}

bool is_tracing() { return TraceSession::current() != nullptr; }

void add_run_check(RunCheck check) {
  TraceSession* session = TraceSession::current();
  JITC_INTERNAL_ASSERT(session, "add_run_check outside a trace");
  session->add_run_check(std::move(check));
}

namespace {

std::vector<c10::Device> devices_of(c10::ArrayRef<detail::Leaf> leaves) {
  std::vector<c10::Device> devices;
  for (const auto& leaf : leaves)
    if (leaf.kind == detail::Leaf::Kind::kTensor) devices.push_back(leaf.tensor->device());
  return devices;
}

bool any_requires_grad(c10::ArrayRef<detail::Leaf> leaves) {
  return std::any_of(leaves.begin(), leaves.end(),
                     [](const detail::Leaf& l) { return l.kind == detail::Leaf::Kind::kTensor && l.tensor->requires_grad(); });
}

// What a training entry cannot hold. The trace's writes and draws are undone by then. A graph break in
// the forward is checked on replay as in inference (a different value re-traces before any backward
// exists); one in the backward (a formula reading data on the host) could not be: the backward runs
// after the call has returned.
void refuse_unsupported_training(const TraceOutcome& outcome) {
  if (!outcome.unreplayable.empty()) throw TraceFailure(TraceFailure::Kind::kTrainingUnsupported, outcome.unreplayable);
  const auto& nodes = outcome.graph.nodes;
  for (size_t i = outcome.backward->forward_nodes; i < nodes.size(); ++i)
    if (nodes[i].checked())
      throw TraceFailure(TraceFailure::Kind::kBackwardReadsHost,
                         fmt::format("the backward reads a value on the host ({}): compiled training needs a backward "
                                     "without graph breaks",
                                     nodes[i].name()));
}

TraceOutcome trace_once(const detail::Invoker& invoker, c10::ArrayRef<detail::Leaf> leaves, const std::vector<std::string>& leaf_names,
                        bool fullgraph, bool training, bool subclass_like = false) {
  TraceSession session(fullgraph, training, subclass_like);
  TraceOutcome outcome;
  outcome.training = training;
  bool committed = false;
  std::string grads_created;
  {
    StandIns stand_ins = make_stand_ins(session, leaves, leaf_names);
    // An inference trace runs below autograd; a training trace keeps it, so that autograd records its
    // graph over the stand-ins (backward_trace.h).
    c10::impl::ExcludeDispatchKeyGuard no_autograd(training ? c10::DispatchKeySet() : c10::autograd_dispatch_keyset_with_ADInplaceOrView);
    c10::impl::IncludeDispatchKeyGuard mode(kTracerKey);
    try {
      outcome.result = invoker(stand_ins.leaves);
      check_grads_kept(stand_ins, leaf_names);
      // A training call whose results need no gradient ran its own backward, if any: its trace can be the
      // call's execution, as an inference trace is, rather than undone and run again (which would repeat
      // its C++ side effects: an optimizer's step count, state it creates on a first step).
      committed = training && !any_result_requires_grad(outcome.result);
      if (const std::string name = session.restore_replaced_captured_grads(!committed); !name.empty()) {
        if (!committed) throw TraceFailure(TraceFailure::Kind::kUntraceable, grad_replaced(name));
        grads_created = grad_created(name);
      }
      if (session.restore_replaced_captures()) throw TraceFailure(TraceFailure::Kind::kUntraceable, kReplacedData);
      if (training && !committed) outcome.backward = record_backward(session, outcome.result);
      for (auto& leaf : outcome.result)
        if (leaf.kind == detail::ResultLeaf::Kind::kTensor) outcome.graph.outputs.push_back(session.bind_output(leaf.tensor));
        else outcome.graph.outputs.push_back(graph::kNoValue);
    } catch (...) {
      rethrow_as_failure(session);
    }
    if (outcome.backward && outcome.backward->grad_inputs.empty()) outcome.backward.reset();  // nothing to differentiate
    if (outcome.backward) session.restore_mutated_inputs();
  }
  auto outputs = std::move(outcome.graph.outputs);
  outcome.graph = session.finish();
  outcome.graph.outputs = std::move(outputs);
  outcome.breaks = session.breaks();
  outcome.run_checks = session.take_run_checks();
  outcome.unreplayable = session.unreplayable_reason();
  // Stand-ins alive now are held by the caller's code (a torch::optim step's new state buffers, gradients a
  // step's backward created): a replay could not update them. The trace is the call's execution, and they
  // become the tensors it computed. (The autograd graph of a training trace whose results require grad may
  // still hold some: there such a stand-in keeps failing on use.)
  const bool kept = (!training || committed) && keep_escaped_stand_ins(session.id()) > 0;
  if (outcome.unreplayable.empty()) outcome.unreplayable = !grads_created.empty() ? grads_created : kept ? kKeptStandIns : "";
  outcome.first_call_only = !grads_created.empty() || kept;
  if (outcome.backward) refuse_unsupported_training(outcome);
  return outcome;
}

// prod's and cumprod's data-independent backward gives a finite gradient at a NaN or infinite element
// where eager's gives NaN (and NaN where eager's cumprod gives 0 after a zero): such a graph keeps eager's
// formulas, and so runs eagerly. (max, min and median over all elements: their data-independent form is
// the one eager runs on CUDA.)
void refuse_formulas_differing_from_eager(const TraceOutcome& outcome) {
  if (!outcome.backward) return;
  for (size_t i = 0; i < outcome.backward->forward_nodes; ++i) {
    const std::string& name = outcome.graph.nodes[i].op.operator_name().name;
    if (name == "aten::prod" || name == "aten::cumprod")
      throw TraceFailure(TraceFailure::Kind::kTrainingUnsupported,
                         fmt::format("the backward of {} reads a value on the host (whether an element is 0), and its form that "
                                     "reads none differs from eager's at NaN and infinite elements",
                                     name));
  }
}

// A failure of a training trace says nothing about inference calls: they may still compile. A backward
// that read a value on the host (an ATen formula asking whether a maximum is NaN, whether an element is
// 0) is traced once more with subclass-like stand-ins, whose formulas read none (ATen's forms for
// FakeTensors, which torch.compile traces with); only then, and not on every trace, because those forms
// may treat NaN and infinity otherwise than eager's (README, Training).
TraceOutcome trace_for_training(const detail::Invoker& invoker, c10::ArrayRef<detail::Leaf> leaves,
                                const std::vector<std::string>& leaf_names, bool fullgraph, const GeneratorStates& generators) {
  try {
    try {
      return trace_once(invoker, leaves, leaf_names, fullgraph, true);
    } catch (const TraceFailure& f) {
      if (f.kind() != TraceFailure::Kind::kBackwardReadsHost) throw;
      generators.restore();
      TraceOutcome outcome = trace_once(invoker, leaves, leaf_names, fullgraph, true, /*subclass_like=*/true);
      refuse_formulas_differing_from_eager(outcome);
      return outcome;
    }
  } catch (const TraceFailure& f) {
    if (f.kind() == TraceFailure::Kind::kUntraceable || f.kind() == TraceFailure::Kind::kEscapedTracer ||
        f.kind() == TraceFailure::Kind::kBackwardReadsHost)
      throw TraceFailure(TraceFailure::Kind::kTrainingUnsupported, f.what());
    throw;
  }
}

}  // namespace

TraceOutcome trace(const detail::Invoker& invoker, c10::ArrayRef<detail::Leaf> leaves, const std::vector<std::string>& leaf_names,
                   bool fullgraph, bool expect_training) {
  install_tracer();
  const GeneratorStates generators(devices_of(leaves));
  const bool grad = at::GradMode::is_enabled();
  try {
    TraceOutcome outcome = grad && (expect_training || any_requires_grad(leaves))
                               ? trace_for_training(invoker, leaves, leaf_names, fullgraph, generators)
                               : trace_once(invoker, leaves, leaf_names, fullgraph, false);
    if (outcome.backward) generators.restore();
    return outcome;
  } catch (const TraceFailure& f) {
    generators.restore();
    if (f.kind() != TraceFailure::Kind::kGradRequired || !grad) throw;
  } catch (...) {
    generators.restore();
    throw;
  }
  // A captured tensor (a parameter) requires grad: trace again, for training.
  try {
    TraceOutcome outcome = trace_for_training(invoker, leaves, leaf_names, fullgraph, generators);
    if (outcome.backward) generators.restore();
    outcome.retraced_for_grad = true;
    return outcome;
  } catch (...) {
    generators.restore();
    throw;
  }
}

}  // namespace jitc::tracer
