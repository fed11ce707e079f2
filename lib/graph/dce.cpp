#include "graph/passes.h"
#include "graph/renumber.h"

namespace jitc::graph {

namespace {

// Writes, breaks, RNG draws, and ops that return nothing (asserts: they exist for their error).
bool has_side_effect(const Node& n) {
  return n.mutates || n.checked() || n.op.hasTag(at::Tag::nondeterministic_seeded) || n.op.schema().returns().empty();
}

void mark_args_live(const Node& n, std::vector<bool>& live) {
  for (const auto& a : n.args) {
    if (a.kind == Arg::Kind::kValue) live[a.value] = true;
    for (ValueId v : a.list)
      if (v != kNoValue) live[v] = true;
  }
}

}  // namespace

Graph eliminate_dead_code(const Graph& g) {
  std::vector<bool> live(g.values.size(), false);
  for (ValueId v : g.outputs)
    if (v != kNoValue) live[v] = true;
  std::vector<bool> keep(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    bool needed = has_side_effect(n);
    for (const auto& o : n.outputs)
      for (ValueId v : o.values) needed = needed || (v != kNoValue && live[v]);
    if (!needed) continue;
    keep[i] = true;
    mark_args_live(n, live);
  }
  return rebuild(g, keep);
}

}  // namespace jitc::graph
