// Splits a joint forward + backward graph (a training trace, tracer/backward_trace.h) in two, as
// AOTAutograd's partitioner does. The forward graph keeps the joint graph's inputs but the tangents and
// returns the callable's outputs followed by the values the backward needs ("saved"); the backward graph
// takes the saved values followed by the tangents, and returns one gradient per input requiring grad.
// A forward value the backward reads is saved (eager autograd's choice) unless a pointwise op computes it
// from forward inputs and values saved anyway: then the backward graph recomputes it.
#pragma once
#include "graph/graph.h"

#include <vector>

namespace jitc::graph {

struct JointGraph {
  const Graph* graph = nullptr;
  size_t forward_nodes = 0;          // nodes [0, forward_nodes) are the forward's
  std::vector<size_t> tangents;      // input positions of the tangents
  std::vector<ValueId> input_grads;  // the backward's outputs (kNoValue: no gradient)
};

struct SplitGraphs {
  Graph forward;
  Graph backward;
  size_t saved = 0;       // forward.outputs = joint outputs, then `saved` values
  size_t recomputed = 0;  // forward values the backward graph computes again instead
};

SplitGraphs split_joint(const JointGraph& joint);

}  // namespace jitc::graph
