#include "graph/renumber.h"

#include <numeric>

namespace jitc::graph {

namespace {

struct Renumberer {
  const Graph& src;
  const std::vector<ValueId>& replace;
  std::vector<ValueId> map;
  Graph out;

  ValueId define(ValueId old, int32_t producer) {
    if (old == kNoValue) return kNoValue;
    Value v = src.values[old];
    v.producer = producer;
    out.values.push_back(std::move(v));
    return map[old] = static_cast<ValueId>(out.values.size() - 1);
  }
  ValueId use(ValueId old) const { return old == kNoValue ? kNoValue : map[replace[old]]; }
};

}  // namespace

Graph rebuild(const Graph& g, const std::vector<bool>& keep_node, const std::vector<ValueId>& replace) {
  Renumberer r{g, replace, std::vector<ValueId>(g.values.size(), kNoValue), {}};
  r.out.num_symbols = g.num_symbols;
  for (const auto& in : g.inputs) {
    Input copy = in;
    copy.value = r.define(in.value, -1);
    r.out.inputs.push_back(std::move(copy));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!keep_node[i]) continue;
    Node n = g.nodes[i];
    for (auto& a : n.args) {
      if (a.kind == Arg::Kind::kValue) a.value = r.use(a.value);
      for (auto& v : a.list) v = r.use(v);
    }
    const auto index = static_cast<int32_t>(r.out.nodes.size());
    for (auto& o : n.outputs)
      for (auto& v : o.values) v = r.define(v, index);
    r.out.nodes.push_back(std::move(n));
  }
  for (ValueId v : g.outputs) r.out.outputs.push_back(r.use(v));
  return r.out;
}

Graph rebuild(const Graph& g, const std::vector<bool>& keep_node) {
  std::vector<ValueId> identity(g.values.size());
  std::iota(identity.begin(), identity.end(), 0);
  return rebuild(g, keep_node, identity);
}

Graph renumbered(const Graph& g) { return rebuild(g, std::vector<bool>(g.nodes.size(), true)); }

}  // namespace jitc::graph
