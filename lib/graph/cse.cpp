#include "graph/passes.h"
#include "graph/renumber.h"

#include <algorithm>
#include <numeric>

namespace jitc::graph {

namespace {

// Views are never merged (two views are distinct tensors a later write could tell apart), nor are ops
// whose results are ever written (merging would make two buffers one) or whose inputs are.
bool mergeable(const Graph& g, const Node& n, const std::vector<bool>& written_storage) {
  if (n.mutates || n.checked() || n.op.hasTag(at::Tag::nondeterministic_seeded)) return false;
  for (const auto& r : n.op.schema().returns())
    if (r.alias_info()) return false;
  auto written = [&](ValueId v) { return v != kNoValue && g.values[v].storage >= 0 && written_storage[g.values[v].storage]; };
  for (const auto& o : n.outputs)
    for (ValueId v : o.values)
      if (written(v)) return false;
  // A read of memory that is written somewhere may see different data at two points of the graph.
  for (const auto& a : n.args) {
    if (a.kind == Arg::Kind::kValue && written(a.value)) return false;
    for (ValueId v : a.list)
      if (written(v)) return false;
  }
  return true;
}

bool same_args(const Node& a, const Node& b, const std::vector<ValueId>& replace) {
  if (a.op != b.op || a.args.size() != b.args.size()) return false;
  for (size_t i = 0; i < a.args.size(); ++i) {
    const Arg& x = a.args[i];
    const Arg& y = b.args[i];
    if (x.kind != y.kind || x.symbolic != y.symbolic) return false;
    if (x.kind == Arg::Kind::kValue && replace[x.value] != replace[y.value]) return false;
    if (x.list.size() != y.list.size()) return false;
    for (size_t k = 0; k < x.list.size(); ++k) {
      const bool none = x.list[k] == kNoValue;
      if (none != (y.list[k] == kNoValue)) return false;
      if (!none && replace[x.list[k]] != replace[y.list[k]]) return false;
    }
    if (x.kind == Arg::Kind::kConstant && !same_constant(x.constant, y.constant)) return false;
  }
  return true;
}

std::vector<bool> written_storages(const Graph& g) {
  int32_t max_storage = 0;
  for (const auto& v : g.values) max_storage = std::max(max_storage, v.storage + 1);
  std::vector<bool> written(max_storage, false);
  auto mark = [&](ValueId v) {
    if (v != kNoValue && g.values[v].storage >= 0) written[g.values[v].storage] = true;
  };
  for (const auto& n : g.nodes) {
    if (!n.mutates) continue;
    for (const auto& o : n.outputs)
      for (ValueId v : o.values) mark(v);
    if (!writes_unannotated(n)) continue;
    for (const auto& a : n.args) {
      if (a.kind == Arg::Kind::kValue) mark(a.value);
      for (ValueId v : a.list) mark(v);
    }
  }
  return written;
}

// Whether a node's results share memory with a result of the graph (are one, or a view of one).
// Merging two such nodes would make two results handed to the caller share a buffer; eager's do not.
bool backs_result(const Graph& g, const Node& n, const std::vector<int32_t>& result_storages) {
  for (const auto& o : n.outputs)
    for (ValueId v : o.values)
      if (v != kNoValue && std::find(result_storages.begin(), result_storages.end(), g.values[v].storage) != result_storages.end())
        return true;
  return false;
}

}  // namespace

Graph eliminate_common_subexpressions(const Graph& g) {
  const auto written = written_storages(g);
  std::vector<int32_t> result_storages;
  for (ValueId v : g.outputs)
    if (v != kNoValue) result_storages.push_back(g.values[v].storage);
  std::vector<ValueId> replace(g.values.size());
  std::iota(replace.begin(), replace.end(), 0);
  std::vector<bool> keep(g.nodes.size(), true);
  std::vector<size_t> candidates;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!mergeable(g, n, written)) continue;
    for (size_t j : candidates) {
      const Node& m = g.nodes[j];
      if (!same_args(m, n, replace) || m.outputs.size() != n.outputs.size()) continue;
      if (backs_result(g, n, result_storages) && backs_result(g, m, result_storages)) continue;
      for (size_t o = 0; o < n.outputs.size(); ++o)
        for (size_t k = 0; k < n.outputs[o].values.size(); ++k)
          if (n.outputs[o].values[k] != kNoValue) replace[n.outputs[o].values[k]] = m.outputs[o].values[k];
      keep[i] = false;
      break;
    }
    if (keep[i]) candidates.push_back(i);
  }
  return rebuild(g, keep, replace);
}

}  // namespace jitc::graph
