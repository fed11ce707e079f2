#include "inductor/emitter.h"

#include "graph/renumber.h"

#include <jitc/detail/internal_assert.h>

namespace jitc::inductor {

graph::Graph decompose(const graph::Graph& g, const Decomposer& decomposer) {
  graph::Graph r = g;
  r.nodes.clear();
  bool changed = false;
  for (const graph::Node& n : g.nodes) {
    const bool single = n.outputs.size() == 1 && n.outputs[0].values.size() == 1;
    const size_t before = r.nodes.size();
    Emitter emitter(r, single ? g.values[n.outputs[0].values[0]].meta.device : c10::Device(c10::kCPU));
    const graph::ValueId result = single ? decomposer(emitter, g, n) : graph::kNoValue;
    if (result == graph::kNoValue) {
      JITC_INTERNAL_ASSERT(r.nodes.size() == before, "a decomposer emitted nodes for a node it does not apply to");
      r.nodes.push_back(n);
      continue;
    }
    const graph::ValueId out = n.outputs[0].values[0];
    JITC_INTERNAL_ASSERT(r.values[result].meta.sizes == g.values[out].meta.sizes && r.values[result].meta.dtype == g.values[out].meta.dtype,
                         "a decomposition's result differs from the traced op's");
    JITC_INTERNAL_ASSERT(r.nodes.back().outputs[0].values[0] == result, "a decomposition must end with the node of its result");
    r.nodes.back().outputs[0].values[0] = out;
    r.values[out].producer = static_cast<int32_t>(r.nodes.size() - 1);
    changed = true;
  }
  return changed ? graph::renumbered(r) : g;
}

}  // namespace jitc::inductor
