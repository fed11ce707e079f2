#include "tracer/trace.h"

#include <jitc/errors.h>

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <mutex>
#include <unordered_map>

namespace jitc::tracer {

namespace {

void trace_fallback(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  c10::impl::ExcludeDispatchKeyGuard no_reentry(kTracerKey);
  TraceSession* session = TraceSession::current();
  if (!session)
    throw UnsupportedError("jitc: " + op.operator_name().name +
                           " was called on a tensor created while jitc traced a callable, after the trace "
                           "ended. Return tensors from the compiled callable instead of storing them elsewhere.");
  session->record(op, keys, stack);
}

// Stand-ins for the tensor leaves; the same tensor object passed twice gets the same stand-in, so code
// comparing identities (a.is_same(b)) sees what eager sees.
struct StandIns {
  std::vector<at::Tensor> tracers;
  std::vector<detail::Leaf> leaves;
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
  }
  return s;
}

[[noreturn]] void rethrow_as_failure(TraceSession& session) {
  session.restore_mutated_inputs();
  try {
    throw;
  } catch (const TraceFailure&) {
    throw;
  } catch (const jitc::Error&) {
    throw;
  } catch (const c10::Error& e) {  // its what() carries a C++ backtrace: the warning wants the message only
    throw TraceFailure(TraceFailure::Kind::kUntraceable, e.what_without_backtrace());
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

TraceOutcome trace(const detail::Invoker& invoker, c10::ArrayRef<detail::Leaf> leaves, const std::vector<std::string>& leaf_names,
                   bool fullgraph) {
  install_tracer();
  TraceSession session(fullgraph);
  TraceOutcome outcome;
  {
    StandIns stand_ins = make_stand_ins(session, leaves, leaf_names);
    c10::impl::ExcludeDispatchKeyGuard no_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);
    c10::impl::IncludeDispatchKeyGuard mode(kTracerKey);
    try {
      outcome.result = invoker(stand_ins.leaves);
      for (auto& leaf : outcome.result)
        if (leaf.kind == detail::ResultLeaf::Kind::kTensor) outcome.graph.outputs.push_back(session.bind_output(leaf.tensor));
        else outcome.graph.outputs.push_back(graph::kNoValue);
    } catch (...) {
      rethrow_as_failure(session);
    }
  }
  auto outputs = std::move(outcome.graph.outputs);
  outcome.graph = session.finish();
  outcome.graph.outputs = std::move(outputs);
  outcome.breaks = session.breaks();
  outcome.unreplayable = session.unreplayable_reason();
  return outcome;
}

}  // namespace jitc::tracer
