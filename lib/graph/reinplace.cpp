#include "graph/reinplace.h"

#include "graph/renumber.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <map>
#include <string>

namespace jitc::graph {

namespace {

// Functional updates that copy their first argument and write some of its elements, and the in-place op
// eager runs for each (same arguments).
const std::map<std::string, std::string>& in_place_forms() {
  static const auto& forms = *new std::map<std::string, std::string>{
      {"aten::index_copy", "aten::index_copy_"},         {"aten::index_put", "aten::index_put_"},
      {"aten::index_fill", "aten::index_fill_"},         {"aten::scatter", "aten::scatter_"},
      {"aten::masked_scatter", "aten::masked_scatter_"},
  };
  return forms;
}

std::vector<ValueId> tensors_read(const Node& n) {
  std::vector<ValueId> read;
  for (const auto& a : n.args) {
    if (a.kind == Arg::Kind::kValue) read.push_back(a.value);
    for (ValueId v : a.list)
      if (v != kNoValue) read.push_back(v);
  }
  return read;
}

bool is_write_back(const Graph& g, const Node& n, ValueId input, ValueId updated) {
  return n.name() == "aten::copy_" && n.args.size() >= 2 && n.args[0].kind == Arg::Kind::kValue && n.args[0].value == input &&
         n.args[1].kind == Arg::Kind::kValue && n.args[1].value == updated && g.values[input].producer < 0;
}

class Reinplacer {
 public:
  explicit Reinplacer(const Graph& g) : g_(g), uses_(g.values.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (ValueId v : tensors_read(g.nodes[i])) uses_[v].push_back(static_cast<int>(i));
    for (ValueId v : g.outputs)
      if (v != kNoValue) returned_.push_back(v);
  }

  // The epilogue's write-back of node i's result, when node i may run in place instead; -1 otherwise.
  int write_back_of(size_t i) const {
    const Node& n = g_.nodes[i];
    if (n.mutates || !in_place_forms().count(n.op.operator_name().name) || n.args.empty() || n.args[0].kind != Arg::Kind::kValue) return -1;
    if (n.outputs.size() != 1 || n.outputs[0].values.size() != 1) return -1;
    const ValueId input = n.args[0].value, updated = n.outputs[0].values[0];
    if (g_.values[input].producer >= 0 || returned(input) || g_.values[input].meta.sizes != g_.values[updated].meta.sizes ||
        g_.values[input].meta.strides != g_.values[updated].meta.strides || g_.values[input].meta.dtype != g_.values[updated].meta.dtype)
      return -1;
    int write_back = -1;
    for (int u : uses_[input]) {
      if (u < static_cast<int>(i)) continue;  // read before the update: still the old contents
      if (u == static_cast<int>(i) && reads_once(n, input)) continue;
      if (write_back < 0 && is_write_back(g_, g_.nodes[u], input, updated)) {
        write_back = u;
        continue;
      }
      return -1;  // the old contents are read after the update (or the input is read twice by it)
    }
    if (write_back < 0 || !unused(g_.nodes[write_back])) return -1;
    // No other value shares the input's memory (a view of it would see the update early); the update's
    // result and the write-back's may (functionalization gives them the memory they stand for).
    for (size_t v = 0; v < g_.values.size(); ++v) {
      const int producer = g_.values[v].producer;
      if (static_cast<ValueId>(v) == input || producer == static_cast<int>(i) || producer == write_back) continue;
      if (g_.values[v].storage == g_.values[input].storage) return -1;
    }
    return write_back;
  }

 private:
  bool returned(ValueId v) const { return std::find(returned_.begin(), returned_.end(), v) != returned_.end(); }
  static bool reads_once(const Node& n, ValueId v) {
    const auto read = tensors_read(n);
    return std::count(read.begin(), read.end(), v) == 1;
  }
  // The write-back's own result is read by nothing (copy_ returns its destination).
  bool unused(const Node& n) const {
    for (const auto& o : n.outputs)
      for (ValueId v : o.values)
        if (!uses_[v].empty() || returned(v)) return false;
    return true;
  }

  const Graph& g_;
  std::vector<std::vector<int>> uses_;
  std::vector<ValueId> returned_;
};

}  // namespace

Graph reinplace_input_updates(const Graph& g) {
  Reinplacer reinplacer(g);
  Graph r = g;
  std::vector<bool> keep(g.nodes.size(), true);
  bool changed = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const int write_back = reinplacer.write_back_of(i);
    if (write_back < 0) continue;
    Node& n = r.nodes[i];
    const auto name = in_place_forms().at(n.op.operator_name().name);
    n.op = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), n.op.operator_name().overload_name.c_str());
    n.mutates = true;
    const ValueId input = n.args[0].value, updated = n.outputs[0].values[0];
    r.values[updated].storage = r.values[input].storage;  // the result is the input, updated
    keep[static_cast<size_t>(write_back)] = false;
    changed = true;
  }
  return changed ? rebuild(r, keep) : g;
}

}  // namespace jitc::graph
