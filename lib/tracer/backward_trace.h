// The backward half of a training trace (AOTAutograd's joint graph). The forward ran with autograd
// above the tracer, so autograd built its graph of backward nodes over tracer tensors. Here those nodes
// run, on this thread and in the engine's order, on one tangent per differentiable output: their ATen
// calls are recorded after the forward's, and the gradient reaching each argument stand-in or captured
// tensor is noted. graph/partition.h then splits the joint graph into a forward and a backward graph.
#pragma once
#include "graph/graph.h"
#include "tracer/trace_session.h"

#include <jitc/detail/leaves.h>

#include <vector>

namespace jitc::tracer {

struct BackwardRecord {
  size_t forward_nodes = 0;                 // the joint graph's nodes [0, forward_nodes) are the forward's
  std::vector<size_t> outputs;              // result leaves that are differentiable, in order
  std::vector<size_t> tangents;             // graph input position of each one's tangent
  std::vector<size_t> grad_inputs;          // graph input positions whose tensors require grad
  std::vector<graph::ValueId> input_grads;  // the gradient of each (kNoValue: none reaches it)
};

// Records the backward of `result` (tracer tensors). Throws TraceFailure(kTrainingUnsupported) for what
// it cannot compile (hooks on tensors inside the callable, a data-dependent backward formula...).
BackwardRecord record_backward(TraceSession& session, const detail::ResultLeaves& result);

}  // namespace jitc::tracer
