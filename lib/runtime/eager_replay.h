// The eager backend: replays a recorded graph node by node through the dispatcher on real tensors. In-
// place ops and views run as recorded, so aliasing, write-backs into arguments and views returned to the
// caller are exactly eager's. It is the reference every code-generating backend is tested against.
#pragma once
#include "graph/graph.h"

#include <ATen/core/Tensor.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <string>
#include <vector>

namespace jitc::runtime {

struct ReplayInputs {
  std::vector<at::Tensor>* values;  // scratch, one slot per graph value; input slots filled by the caller
  const int64_t* symbols;           // bound symbolic sizes
  // replay: each op's fresh results copied to their traced layouts where the op chose another. A backward
  // graph's saved inputs may arrive channels-last (inductor/channels_last.h) while its values were traced
  // contiguous: ATen's results would follow the inputs' layout, and a view of them could then fail.
  bool traced_layouts = false;
};

// Runs every node. Returns false when a graph-break check fails (a data-dependent result differs from
// the traced one); `why` then says which op and values. Errors of ATen ops propagate.
bool replay(const graph::Graph& graph, const ReplayInputs& inputs, std::string* why);

// Runs one node the same way (the extern calls of compiled programs). The caller excludes the autograd
// and autocast keys (ExcludeBelowAutograd).
bool replay_node(const graph::Graph& graph, const graph::Node& node, const ReplayInputs& inputs, std::string* why);

// After an extern call of a compiled program: each fresh (non-aliasing) tensor output with the strides
// of its traced meta, which the kernels that read it assume. An op whose output layout follows its
// inputs' may choose another one where a graph pass changed those (channels_last.cpp); a copy then
// restores the traced strides.
void restride_outputs(const graph::Graph& graph, const graph::Node& node, std::vector<at::Tensor>& values, const int64_t* symbols);

// t itself where its strides are meta's, a view of it with meta's strides where only dims of size 1
// differ, else a copy of it with meta's strides.
at::Tensor in_layout(const at::Tensor& t, const graph::TensorMeta& meta, const int64_t* symbols);

// The dispatch keys a replay runs below: the trace ran below autograd and autocast, and their effects
// (casts) are recorded as ops.
struct ExcludeBelowAutograd {
  c10::impl::ExcludeDispatchKeyGuard guard{c10::autograd_dispatch_keyset | c10::autocast_dispatch_keyset};
};

}  // namespace jitc::runtime
