#include "graph/passes.h"

#include <jitc/errors.h>

#include <fmt/format.h>

namespace jitc::graph {

namespace {

void fail(const Graph& g, size_t node, const std::string& what) {
  throw InternalError(
      fmt::format("jitc graph verifier: node {} ({}): {}. This is a jitc bug; please report it "
                  "with JITC_LOGS=graph_code output.",
                  node, node < g.nodes.size() ? g.nodes[node].name() : "inputs", what));
}

void check_use(const Graph& g, size_t node, ValueId v, const std::vector<bool>& defined) {
  if (v == kNoValue) return;
  if (v < 0 || static_cast<size_t>(v) >= g.values.size()) fail(g, node, fmt::format("uses unknown value %{}", v));
  if (!defined[v]) fail(g, node, fmt::format("uses %{} before it is defined", v));
}

}  // namespace

void verify(const Graph& g) {
  std::vector<bool> defined(g.values.size(), false);
  for (const auto& in : g.inputs) {
    if (in.value < 0 || static_cast<size_t>(in.value) >= g.values.size()) fail(g, g.nodes.size(), "bad input value");
    defined[in.value] = true;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.args.size() != n.op.schema().arguments().size()) fail(g, i, "argument count differs from the schema");
    for (const auto& a : n.args) {
      if (a.kind == Arg::Kind::kValue) {
        if (a.value == kNoValue) fail(g, i, "tensor argument without a value");
        check_use(g, i, a.value, defined);
      }
      for (ValueId v : a.list) check_use(g, i, v, defined);
    }
    for (const auto& o : n.outputs)
      for (ValueId v : o.values) {
        if (v == kNoValue) continue;
        if (defined[v]) fail(g, i, fmt::format("redefines %{}", v));
        if (g.values[v].producer != static_cast<int32_t>(i)) fail(g, i, fmt::format("%{} names another producer", v));
        defined[v] = true;
      }
  }
  for (ValueId v : g.outputs) check_use(g, g.nodes.size(), v, defined);
}

}  // namespace jitc::graph
