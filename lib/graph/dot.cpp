#include "graph/passes.h"

#include <fmt/format.h>

namespace jitc::graph {

std::string to_dot(const Graph& g) {
  std::string s = "digraph jitc {\n  rankdir=TB;\n  node [shape=box, fontname=monospace];\n";
  for (const auto& in : g.inputs) s += fmt::format("  v{} [label=\"%{} {}\", shape=ellipse];\n", in.value, in.value, in.name);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const char* style = n.kind == NodeKind::kBreak ? ", style=filled, fillcolor=salmon" : "";
    s += fmt::format("  n{} [label=\"{}\"{}];\n", i, n.name(), style);
    for (const auto& a : n.args) {
      if (a.kind == Arg::Kind::kValue) s += fmt::format("  v{} -> n{};\n", a.value, i);
      for (ValueId v : a.list)
        if (v != kNoValue) s += fmt::format("  v{} -> n{};\n", v, i);
    }
    for (const auto& o : n.outputs)
      for (ValueId v : o.values) {
        s += fmt::format("  v{} [label=\"%{}\", shape=ellipse];\n", v, v);
        s += fmt::format("  n{} -> v{};\n", i, v);
      }
  }
  for (size_t k = 0; k < g.outputs.size(); ++k)
    if (g.outputs[k] != kNoValue) s += fmt::format("  v{} -> out{};\n  out{} [shape=plaintext];\n", g.outputs[k], k, k);
  return s + "}\n";
}

}  // namespace jitc::graph
