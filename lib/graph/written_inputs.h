// Which inputs of a graph its nodes write in place: an in-place or out= node's output shares the written
// tensor's storage. The engine backs them up before a graph break's check and replays a failed run-time
// check on copies of them.
#pragma once
#include "graph/graph.h"

#include <vector>

namespace jitc::graph {

// Positions in g.inputs of the inputs that nodes [0, end) write.
std::vector<size_t> inputs_written_before(const Graph& g, size_t end);

}  // namespace jitc::graph
