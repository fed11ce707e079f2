#include "inductor/shared_chains.h"

#include "inductor/graph_uses.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

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

std::vector<ValueId> roots_of_needed_views(const graph::Graph& g, const std::function<bool(ValueId)>& computed,
                                           const std::function<ValueId(ValueId)>& viewed, const std::function<bool(size_t)>& is_extern) {
  std::vector<ValueId> needed(g.outputs.begin(), g.outputs.end()), written;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (is_extern(i))
      for (ValueId v : node_tensor_args(g.nodes[i])) (g.nodes[i].mutates ? written : needed).push_back(v);
  auto root_of = [&](ValueId v) {
    while (v != graph::kNoValue && viewed(v) != graph::kNoValue && computed(v)) v = viewed(v);
    return v;
  };
  std::set<ValueId> excluded;  // roots written through a view, or with a view of symbolic size
  for (ValueId v : written) excluded.insert(root_of(v));
  std::map<ValueId, int64_t> covered;  // per root: the elements of its needed views
  std::set<ValueId> seen;
  for (ValueId v : needed) {
    if (v == graph::kNoValue || !computed(v) || viewed(v) == graph::kNoValue || !seen.insert(v).second) continue;
    const ValueId root = root_of(v);
    if (!computed(root)) continue;  // a view of a buffer is a real view already
    if (const auto n = graph::constant_numel(g.values[v].meta.sizes)) covered[root] += *n;
    else excluded.insert(root);
  }
  std::vector<ValueId> roots;
  for (const auto& [root, elements] : covered) {
    const auto n = graph::constant_numel(g.values[root].meta.sizes);
    if (n && *n > 0 && elements >= *n && !excluded.count(root)) roots.push_back(root);
  }
  return roots;
}

}  // namespace jitc::inductor
