#include "inductor/checked_reads.h"

#include "inductor/graph_uses.h"
#include "inductor/lowering.h"

#include <string>
#include <unordered_set>

namespace jitc::inductor {

namespace {

using graph::Node;
using graph::ValueId;

// Ops whose lowering reads every element of its tensor arguments: pointwise ops (broadcasting repeats
// elements, it skips none), reductions and normalizations, the activations' backward formulas, views
// that reorder or repeat elements, and the ops that assemble whole tensors. Slices, selects, windows,
// indexing, padding and triangles read part of theirs. A lowering that reads only part of a tensor
// argument belongs in none of the three registries read here (register_views or register_windows take it).
const std::unordered_set<std::string>& whole_readers() {
  static const auto& names = *new std::unordered_set<std::string>([] {
    Registry r;
    register_pointwise(r);
    register_reductions(r);
    register_gradients(r);
    std::unordered_set<std::string> all;
    for (const auto& entry : r) all.insert(entry.first);
    for (const char* op : {"aten::view",       "aten::reshape",  "aten::_unsafe_view", "aten::_reshape_alias", "aten::squeeze",
                           "aten::unsqueeze",  "aten::flatten",  "aten::unflatten",    "aten::alias",          "aten::detach",
                           "aten::lift_fresh", "aten::view_as",  "aten::reshape_as",   "aten::permute",        "aten::transpose",
                           "aten::t",          "aten::swapaxes", "aten::swapdims",     "aten::expand",         "aten::expand_as",
                           "aten::cat",        "aten::stack"})
      all.insert(op);
    return all;
  }());
  return names;
}

// Arguments that give only a shape or a dtype: their elements are never read.
bool shape_only(const std::string& op, size_t arg) {
  if (arg == 0) return op == "aten::copy";  // copy(self, src): the result is src's elements
  return arg == 1 && (op == "aten::type_as" || op == "aten::expand_as" || op == "aten::view_as" || op == "aten::reshape_as");
}

bool reads_whole(const Node& n, size_t arg) {
  const auto& name = n.op.operator_name();
  const auto& readers = whole_readers();
  const bool listed =
      readers.count(name.name + "." + (name.overload_name.empty() ? "default" : name.overload_name)) || readers.count(name.name);
  return listed && !shape_only(name.name, arg);
}

}  // namespace

std::vector<ValueId> checked_values_read_in_part(const graph::Graph& g, const std::vector<char>& checks,
                                                 const std::function<bool(ValueId)>& inlined, const std::function<bool(size_t)>& lowered) {
  // readers[v]: (node, argument position) pairs reading v.
  std::vector<std::vector<std::pair<size_t, size_t>>> readers(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (size_t a = 0; a < g.nodes[i].args.size(); ++a) {
      const auto& arg = g.nodes[i].args[a];
      if (arg.kind == graph::Arg::Kind::kValue) readers[arg.value].emplace_back(i, a);
      for (ValueId v : arg.list)
        if (v != graph::kNoValue) readers[v].emplace_back(i, a);
    }
  std::vector<char> carries(g.values.size(), 0);
  std::vector<ValueId> chosen;
  for (size_t v = 0; v < g.values.size(); ++v) {
    const int p = g.values[v].producer;
    if (p < 0 || !inlined(static_cast<ValueId>(v))) continue;  // a buffer: computed whole by its own kernel
    bool carried = checks[v];
    for (ValueId a : node_tensor_args(g.nodes[p])) carried = carried || carries[a];
    if (!carried) continue;
    bool in_part = false;
    for (const auto& [reader, arg] : readers[v]) in_part = in_part || (lowered(reader) && !reads_whole(g.nodes[reader], arg));
    if (in_part) chosen.push_back(static_cast<ValueId>(v));
    carries[v] = !in_part;
  }
  return chosen;
}

}  // namespace jitc::inductor
