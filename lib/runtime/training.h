// Runs a training entry (entry.h, BackwardPart): the forward graph inside an autograd Function whose
// backward runs the backward graph, so that the rest of autograd (eager ops before and after the call,
// hooks on parameters, gradient accumulation, optimizers) works as with eager's own nodes. The Function
// links to the tensors requiring grad that the forward read (arguments and captured parameters) and
// keeps the forward's saved values (version-checked, freed by the backward that does not retain the graph).
#pragma once
#include "graph/graph.h"
#include "runtime/entry.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

namespace jitc::runtime {

// `values`: one slot per value of `graph` (the forward program's graph, or the entry's), inputs filled;
// `forward` runs it. On return the differentiable outputs in `values` carry the Function's history.
// `name`: the compiled function's, for error messages; `symbols`: a symbolic entry's values for this call,
// which its backward graph runs with as well.
bool run_training(const Entry& entry, const graph::Graph& graph, std::vector<at::Tensor>& values, const std::function<bool()>& forward,
                  const std::string& name, const int64_t* symbols);

}  // namespace jitc::runtime
