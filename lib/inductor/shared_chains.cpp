#include "inductor/shared_chains.h"

#include "inductor/graph_uses.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace jitc::inductor {

using graph::ValueId;

namespace {

// The distinct buffers node n's inlined computation reads, sorted: the union of its operands' (`sources`
// per value, a buffer its own).
std::vector<ValueId> operand_sources(const graph::Node& n, const std::vector<std::vector<ValueId>>& sources) {
  std::vector<ValueId> found;
  for (ValueId a : node_tensor_args(n)) found.insert(found.end(), sources[a].begin(), sources[a].end());
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

}  // namespace

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
    std::vector<ValueId> found = operand_sources(g.nodes[p], sources);
    if (readers[v] >= 2 && found.size() >= kSharedChainSources && !view(static_cast<ValueId>(v))) {
      chosen.push_back(static_cast<ValueId>(v));
      found = {static_cast<ValueId>(v)};
    }
    sources[v] = std::move(found);
  }
  return chosen;
}

namespace {

// The size of s in units of v's size; 0 where the two cannot be compared (symbolic sizes that differ).
double size_relative_to(const graph::Graph& g, ValueId s, ValueId v) {
  const auto& ms = g.values[s].meta;
  const auto& mv = g.values[v].meta;
  const double item = static_cast<double>(c10::elementSize(ms.dtype)) / static_cast<double>(c10::elementSize(mv.dtype));
  if (ms.sizes == mv.sizes) return item;
  const auto ns = graph::constant_numel(ms.sizes);
  const auto nv = graph::constant_numel(mv.sizes);
  if (!ns || !nv || *nv == 0) return 0;
  return item * static_cast<double>(*ns) / static_cast<double>(*nv);
}

}  // namespace

std::vector<ValueId> values_read_across_extern_calls(const graph::Graph& g, const std::function<bool(ValueId)>& buffer,
                                                     const std::function<bool(ValueId)>& view,
                                                     const std::function<bool(size_t)>& is_extern) {
  const std::vector<std::vector<int>> readers = readers_by_value(g);
  const std::vector<int> last = last_readers(g);
  const std::vector<char> freeable = freed_when_dropped(g);
  std::vector<int> externs_before(g.nodes.size() + 1, 0);  // extern nodes among the first i
  for (size_t i = 0; i < g.nodes.size(); ++i) externs_before[i + 1] = externs_before[i] + (is_extern(i) ? 1 : 0);
  // sources[v]: the buffers v's inlined computation reads; chain_last[v]: the last reader of the values
  // computed inline on the way (a later reader of one of them reads the sources again).
  std::vector<std::vector<ValueId>> sources(g.values.size());
  std::vector<int> chain_last(g.values.size(), -1);
  std::vector<ValueId> found;
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ValueId value = static_cast<ValueId>(v);
    const int p = g.values[v].producer;
    if (p < 0 || buffer(value)) {
      sources[v] = {value};
      continue;
    }
    sources[v] = operand_sources(g.nodes[p], sources);
    for (ValueId a : node_tensor_args(g.nodes[p]))
      if (sources[a] != std::vector<ValueId>{a}) chain_last[v] = std::max({chain_last[v], chain_last[a], last[a]});
    const auto& r = readers[v];
    if (r.empty() || last[v] >= static_cast<int>(g.nodes.size()) || view(value) || chain_last[v] > p) continue;
    if (externs_before[r.back()] == externs_before[r.front() + 1]) continue;  // no extern call between its readers
    if (std::any_of(r.begin(), r.end(), is_extern)) continue;                 // stored anyway: an extern call reads it
    double dying = 0;
    for (ValueId s : sources[v])
      if (freeable[s] && last[s] <= p) dying += size_relative_to(g, s, value);
    if (dying < 2) continue;
    found.push_back(value);
    sources[v] = {value};
    chain_last[v] = -1;
  }
  return found;
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
