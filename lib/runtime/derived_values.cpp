#include "runtime/derived_values.h"

#include "inductor/graph_uses.h"
#include "runtime/eager_replay.h"

#include <jitc/detail/internal_assert.h>

#include <algorithm>

namespace jitc::runtime {

std::unique_ptr<DerivedValues> DerivedValues::of(const graph::Graph& g) {
  auto d = std::unique_ptr<DerivedValues>(new DerivedValues());
  auto derived = [&](graph::ValueId v) {
    return g.values[v].producer >= 0 && g.nodes[g.values[v].producer].kind == graph::NodeKind::kDerived;
  };
  std::vector<bool> kept(g.values.size(), false);  // read by the rest of the graph: cached
  for (graph::ValueId v : g.outputs)
    if (v != graph::kNoValue) kept[v] = true;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const graph::Node& n = g.nodes[i];
    for (graph::ValueId v : inductor::node_tensor_args(n)) {
      if (n.kind != graph::NodeKind::kDerived) kept[v] = true;
      else if (g.values[v].producer < 0 && std::find(d->sources_.begin(), d->sources_.end(), v) == d->sources_.end())
        d->sources_.push_back(v);
    }
    if (n.kind == graph::NodeKind::kDerived) d->nodes_.push_back(static_cast<int>(i));
  }
  if (d->nodes_.empty()) return nullptr;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (kept[v] && derived(static_cast<graph::ValueId>(v))) d->outputs_.push_back(static_cast<graph::ValueId>(v));
  return d;
}

DerivedValues::Seen DerivedValues::seen(const at::Tensor& t) {
  if (!t.defined() || t.is_inference()) return {};  // no version to compare: never seen
  return {t.unsafeGetTensorImpl(), t.storage().data(), static_cast<int64_t>(t._version())};
}

bool DerivedValues::unchanged(const std::vector<at::Tensor>& values) const {
  if (seen_.empty()) return false;
  for (size_t s = 0; s < sources_.size(); ++s) {
    const Seen now = seen(values[sources_[s]]);
    if (now.tensor == nullptr || !(now == seen_[s])) return false;
  }
  return true;
}

void DerivedValues::compute(const graph::Graph& g, std::vector<at::Tensor>& values, const int64_t* symbols) const {
  seen_.clear();
  cached_.clear();
  held_.clear();
  for (int i : nodes_) {
    std::string why;
    const bool held = replay_node(g, g.nodes[i], {&values, symbols}, &why);
    JITC_INTERNAL_ASSERT(held, "a derived value is computed by a checked op: " + why);
  }
  for (graph::ValueId v : outputs_) cached_.push_back(values[v]);
  for (graph::ValueId v : sources_) {
    seen_.push_back(seen(values[v]));
    held_.emplace_back(values[v].getIntrusivePtr());
  }
}

void DerivedValues::fill(const graph::Graph& g, std::vector<at::Tensor>& values, const int64_t* symbols) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!unchanged(values)) {
    compute(g, values, symbols);
    return;
  }
  for (size_t k = 0; k < outputs_.size(); ++k) values[outputs_[k]] = cached_[k];
}

}  // namespace jitc::runtime
