#include "graph/written_inputs.h"

namespace jitc::graph {

std::vector<size_t> inputs_written_before(const Graph& g, size_t end) {
  std::vector<size_t> positions;
  for (size_t p = 0; p < g.inputs.size(); ++p) {
    const int32_t storage = g.values[g.inputs[p].value].storage;
    bool written = false;
    for (size_t i = 0; i < end && i < g.nodes.size() && !written; ++i)
      for (const auto& o : g.nodes[i].outputs)
        for (auto v : o.values) written = written || (g.nodes[i].mutates && g.values[v].storage == storage);
    if (written) positions.push_back(p);
  }
  return positions;
}

}  // namespace jitc::graph
