#include "inductor/emitter.h"

#include "graph/renumber.h"

#include <jitc/detail/internal_assert.h>

#include <numeric>

namespace jitc::inductor {

namespace {

std::vector<graph::ValueId> output_values(const graph::Node& n) {
  std::vector<graph::ValueId> out;
  for (const auto& o : n.outputs) out.insert(out.end(), o.values.begin(), o.values.end());
  return out;
}

// A result standing for a traced value that had memory of its own takes that value's storage id (with
// the values emitted as views of it): views the graph takes of the traced value stay views of it.
// Only values emitted for this node (from `first_value` on) can hold the new storage id.
void adopt_storage(graph::Graph& r, const graph::Graph& g, const graph::Node& n, graph::ValueId traced, graph::ValueId result,
                   int32_t first_emitted, size_t first_value) {
  const int32_t storage = g.values[traced].storage, emitted = r.values[result].storage;
  if (storage < 0 || emitted < first_emitted) return;
  for (const auto& a : n.args) {
    if (a.kind == graph::Arg::Kind::kValue && g.values[a.value].storage == storage) return;
    for (graph::ValueId v : a.list)
      if (v != graph::kNoValue && g.values[v].storage == storage) return;
  }
  for (size_t v = first_value; v < r.values.size(); ++v)
    if (r.values[v].storage == emitted) r.values[v].storage = storage;
}

}  // namespace

// Reads of values an earlier decomposition wrote in place go to their new versions.
bool remap_args(graph::Node& n, const std::vector<graph::ValueId>& renamed) {
  bool changed = false;
  auto remap = [&](graph::ValueId& v) {
    if (v == graph::kNoValue || static_cast<size_t>(v) >= renamed.size() || renamed[v] == v) return;
    v = renamed[v];
    changed = true;
  };
  for (auto& a : n.args) {
    if (a.kind == graph::Arg::Kind::kValue) remap(a.value);
    for (auto& v : a.list) remap(v);
  }
  return changed;
}

graph::Graph decompose(const graph::Graph& g, const Decomposer& decomposer) {
  graph::Graph r = g;
  r.nodes.clear();
  std::vector<graph::ValueId> replace(g.values.size()), renamed(g.values.size());
  std::iota(replace.begin(), replace.end(), 0);
  std::iota(renamed.begin(), renamed.end(), 0);
  bool changed = false;
  int32_t next_storage = 0;
  for (const auto& v : g.values) next_storage = std::max(next_storage, v.storage + 1);
  for (const graph::Node& n : g.nodes) {
    graph::Node mapped = n;
    // A node reading a value written in place by an earlier decomposition stays as it is (the
    // decomposers read the graph as traced).
    const bool reads_renamed = remap_args(mapped, renamed);
    const std::vector<graph::ValueId> outputs = output_values(n);
    const size_t before = r.nodes.size(), first_value = r.values.size();
    Emitter emitter(r, outputs.empty() ? c10::Device(c10::kCPU) : g.values[outputs[0]].meta.device, next_storage);
    const int32_t first_emitted = next_storage;
    const std::vector<graph::ValueId> results =
        outputs.empty() || reads_renamed ? std::vector<graph::ValueId>{} : decomposer(emitter, g, n);
    next_storage = emitter.next_storage();
    if (results.empty()) {
      JITC_INTERNAL_ASSERT(r.nodes.size() == before, "a decomposer emitted nodes for a node it does not apply to");
      r.nodes.push_back(std::move(mapped));
      continue;
    }
    JITC_INTERNAL_ASSERT(results.size() == outputs.size(), "a decomposition must give a value per output");
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (results[k] == graph::kNoValue) continue;
      JITC_INTERNAL_ASSERT(r.values[results[k]].meta.sizes == g.values[outputs[k]].meta.sizes &&
                               r.values[results[k]].meta.dtype == g.values[outputs[k]].meta.dtype,
                           "a decomposition's result differs from the traced op's");
      replace[outputs[k]] = results[k];
      adopt_storage(r, g, n, outputs[k], results[k], first_emitted, first_value);
    }
    for (const auto& [old_value, new_value] : emitter.renames) renamed[old_value] = new_value;
    changed = true;
  }
  if (!changed) return g;
  for (auto& v : r.outputs)
    if (v != graph::kNoValue) v = renamed[v];
  replace.resize(r.values.size());
  std::iota(replace.begin() + static_cast<std::ptrdiff_t>(g.values.size()), replace.end(), static_cast<graph::ValueId>(g.values.size()));
  return graph::rebuild(r, std::vector<bool>(r.nodes.size(), true), replace);
}

}  // namespace jitc::inductor
