#include "inductor/shared_chains.h"

#include "inductor/graph_uses.h"

#include <algorithm>

namespace jitc::inductor {

using graph::ValueId;

std::vector<ValueId> shared_chains(const graph::Graph& g, const std::function<bool(ValueId)>& computed,
                                   const std::function<bool(ValueId)>& view) {
  std::vector<int> readers(g.values.size(), 0);
  for (const auto& n : g.nodes) {
    std::vector<ValueId> args = node_tensor_args(n);
    std::sort(args.begin(), args.end());
    args.erase(std::unique(args.begin(), args.end()), args.end());
    for (ValueId v : args) ++readers[v];
  }
  // sources[v]: the distinct buffers v's inlined computation reads, sorted (a buffer is its own source).
  std::vector<std::vector<ValueId>> sources(g.values.size());
  std::vector<ValueId> chosen;
  for (size_t v = 0; v < g.values.size(); ++v) {
    const int p = g.values[v].producer;
    if (p < 0 || !computed(static_cast<ValueId>(v))) {
      sources[v] = {static_cast<ValueId>(v)};
      continue;
    }
    std::vector<ValueId> found;
    for (ValueId a : node_tensor_args(g.nodes[p])) found.insert(found.end(), sources[a].begin(), sources[a].end());
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end()), found.end());
    if (readers[v] >= 2 && found.size() >= kSharedChainSources && !view(static_cast<ValueId>(v))) {
      chosen.push_back(static_cast<ValueId>(v));
      found = {static_cast<ValueId>(v)};
    }
    sources[v] = std::move(found);
  }
  return chosen;
}

}  // namespace jitc::inductor
