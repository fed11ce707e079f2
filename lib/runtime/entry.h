// Entry: one compiled version of a function, valid where its guards pass (a cache entry in Dynamo's
// terms). Immutable once built; calls share it through shared_ptr.
#pragma once
#include "graph/graph.h"
#include "guards/guard_set.h"
#include "tracer/trace_session.h"

#include <jitc/detail/leaves.h>

#include <string>
#include <vector>

namespace jitc::runtime {

struct ResultSlot {
  detail::ResultLeaf::Kind kind = detail::ResultLeaf::Kind::kTensor;
  graph::ValueId value = graph::kNoValue;  // tensors
  double d = 0;                            // kDouble
  graph::SymExpr i;                        // kInt / kBool (may depend on symbolic sizes)
};

struct Entry {
  int compile_number = 0;  // the N of Dynamo's compile id [frame/N]
  guards::GuardSet guards;
  graph::Graph graph;   // what runs (after DCE and CSE)
  graph::Graph traced;  // as recorded: the partner for a later generalization
  std::vector<ResultSlot> result;
  std::vector<size_t> captured_inputs;       // graph input positions of captured tensors, guard order
  std::vector<std::vector<int64_t>> leaf_sizes;  // sizes of each tensor leaf when traced
  std::vector<tracer::BreakRecord> breaks;
  // Inputs written before a graph break: copied before a replay so that a failed break check can undo
  // the writes before the call is traced again.
  std::vector<size_t> backup_inputs;
};

// Builds the guards of a graph traced on `leaves` (marks: per leaf, dims that may be dynamic).
guards::GuardSet build_guards(const graph::Graph& graph, c10::ArrayRef<detail::Leaf> leaves,
                              const std::vector<std::string>& leaf_names, const std::vector<uint64_t>& dynamic_dims,
                              const std::vector<std::pair<int64_t, int64_t>>& symbol_ranges);

}  // namespace jitc::runtime
