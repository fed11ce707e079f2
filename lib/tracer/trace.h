// tracer::trace: runs a callable once on tracer stand-ins for its tensor arguments and returns the
// recorded graph together with the callable's real result (exactly eager's: every op ran for real).
#pragma once
#include "graph/graph.h"
#include "tracer/backward_trace.h"
#include "tracer/trace_session.h"

#include <jitc/detail/leaves.h>

#include <optional>
#include <string>
#include <vector>

namespace jitc::tracer {

struct TraceOutcome {
  graph::Graph graph;
  detail::ResultLeaves result;  // real tensors, for the caller
  std::vector<BreakRecord> breaks;
  std::string unreplayable;  // non-empty: the result is right but the graph must not be replayed
  // A training trace (grad mode on, a tensor requiring grad reached): the graph is the joint forward and
  // backward. Its writes into arguments and its random draws were undone, and `result` holds tensors
  // without autograd history: the caller runs the call again for its result.
  std::optional<BackwardRecord> backward;
  bool training = false;  // traced with autograd above the tracer (grad mode on, a tensor requiring grad)
  // `unreplayable` because the callable created state a later call finds made (gradients, an optimizer's
  // buffers): a later trace may give a graph.
  bool first_call_only = false;
  // An inference trace met a captured tensor requiring grad and the call was traced again for training:
  // the caller may start the next trace for training (TraceOptions::expect_training).
  bool retraced_for_grad = false;
  std::vector<RunCheck> run_checks;  // what the callable's C++ code registered (add_run_check)
};

// Installs the dispatcher fallback on kTracerKey (once per process).
void install_tracer();

// Throws TraceFailure when the callable cannot be traced; before any exception leaves, writes the trace
// made to arguments and captured tensors and its random draws are undone, so the caller can run the
// callable eagerly. In grad mode, a call whose arguments or captured tensors require grad is traced for
// training (see TraceOutcome::backward). `expect_training`: in grad mode, trace for training at once,
// without a first inference attempt that finds a captured tensor requiring grad (and runs the callable's
// C++ code once more).
TraceOutcome trace(const detail::Invoker& invoker, c10::ArrayRef<detail::Leaf> leaves, const std::vector<std::string>& leaf_names,
                   bool fullgraph, bool expect_training = false);

// True while this thread is tracing (a compiled function called inside another one is inlined).
bool is_tracing();

// While tracing: every entry made from this trace runs `check` before each run (RunCheck). C++ code
// whose graph reads host state through captured tensors registers one (jitc::optim's steps inlined into
// a compiled training step: a learning rate set between calls).
void add_run_check(RunCheck check);

}  // namespace jitc::tracer
