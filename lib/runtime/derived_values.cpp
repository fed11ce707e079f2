#include "runtime/derived_values.h"

#include "inductor/graph_uses.h"
#include "runtime/eager_replay.h"

#include <jitc/detail/internal_assert.h>

#include <algorithm>
#include <cstring>

namespace jitc::runtime {

namespace {

bool is_derived(const graph::Graph& g, graph::ValueId v) {
  return g.values[v].producer >= 0 && g.nodes[g.values[v].producer].kind == graph::NodeKind::kDerived;
}

// Per value: read by a node that is not derived, or a graph output (then cached).
std::vector<bool> read_by_the_program(const graph::Graph& g) {
  std::vector<bool> read(g.values.size(), false);
  for (graph::ValueId v : g.outputs)
    if (v != graph::kNoValue) read[v] = true;
  for (const graph::Node& n : g.nodes)
    if (n.kind != graph::NodeKind::kDerived)
      for (graph::ValueId v : inductor::node_tensor_args(n)) read[v] = true;
  return read;
}

}  // namespace

std::unique_ptr<DerivedValues> DerivedValues::of(const graph::Graph& g) {
  auto d = std::unique_ptr<DerivedValues>(new DerivedValues());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].kind == graph::NodeKind::kDerived) d->nodes_.push_back(static_cast<int>(i));
  if (d->nodes_.empty()) return nullptr;
  const std::vector<bool> read = read_by_the_program(g);
  for (size_t v = 0; v < g.values.size(); ++v)
    if (read[v] && is_derived(g, static_cast<graph::ValueId>(v))) d->outputs_.push_back(d->cone_of(g, static_cast<graph::ValueId>(v)));
  d->seen_.resize(d->sources_.size());
  d->changed_.resize(d->sources_.size());
  d->held_.resize(d->sources_.size(), Weak(c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>()));
  d->cached_.resize(d->outputs_.size());
  return d;
}

// The derived nodes v needs (as positions in nodes_) and the captured tensors they read.
DerivedValues::Output DerivedValues::cone_of(const graph::Graph& g, graph::ValueId v) {
  Output out{v, {}, {}};
  std::vector<graph::ValueId> stack{v};
  while (!stack.empty()) {
    const graph::ValueId u = stack.back();
    stack.pop_back();
    const int producer = g.values[u].producer;
    if (producer < 0) {
      auto at = std::find(sources_.begin(), sources_.end(), u);
      if (at == sources_.end()) at = sources_.insert(sources_.end(), u);
      const int s = static_cast<int>(at - sources_.begin());
      if (std::find(out.sources.begin(), out.sources.end(), s) == out.sources.end()) out.sources.push_back(s);
      continue;
    }
    const int position = static_cast<int>(std::find(nodes_.begin(), nodes_.end(), producer) - nodes_.begin());
    if (std::find(out.nodes.begin(), out.nodes.end(), position) != out.nodes.end()) continue;
    out.nodes.push_back(position);
    for (graph::ValueId a : inductor::node_tensor_args(g.nodes[producer])) stack.push_back(a);
  }
  std::sort(out.nodes.begin(), out.nodes.end());
  return out;
}

// The bits of a few elements spread over t, hashed: a write through an alias that PyTorch does not
// version (`t.data()`, `variable_data()`: a new version counter) that changes the whole tensor (an update
// written by hand, a reinitialization) shows there.
uint64_t DerivedValues::sampled_bits(const at::Tensor& t) {
  constexpr int64_t kSamples = 16;
  const int64_t n = t.numel();
  if (n == 0) return 0;
  const auto* base = static_cast<const unsigned char*>(t.data_ptr());
  const size_t size = std::min<size_t>(t.element_size(), sizeof(uint64_t));
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the samples
  for (int64_t k = 0; k < kSamples; ++k) {
    int64_t linear = k * (n - 1) / (kSamples - 1), offset = 0;
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      offset += (linear % t.size(d)) * t.stride(d);
      linear /= t.size(d);
    }
    uint64_t bits = 0;
    std::memcpy(&bits, base + offset * t.element_size(), size);
    hash = (hash ^ bits) * 1099511628211ull;
  }
  return hash;
}

DerivedValues::Seen DerivedValues::seen(const at::Tensor& t) {
  if (!t.defined() || t.is_inference()) return {};  // no version to compare: never seen
  return {t.unsafeGetTensorImpl(), t.storage().data(), static_cast<int64_t>(t._version()), sampled_bits(t)};
}

void DerivedValues::fill(const graph::Graph& g, std::vector<at::Tensor>& values, const int64_t* symbols) const {
  std::lock_guard<std::mutex> lock(mutex_);
  bool any_changed = !computed_;
  for (size_t s = 0; s < sources_.size(); ++s) {
    const Seen now = seen(values[sources_[s]]);
    changed_[s] = now.tensor == nullptr || !(now == seen_[s]);
    if (!changed_[s]) continue;
    any_changed = true;
    seen_[s] = now;
    held_[s] = Weak(values[sources_[s]].getIntrusivePtr());
  }
  if (!any_changed) {  // the hit path of a compiled call: nothing allocated
    for (size_t k = 0; k < outputs_.size(); ++k) values[outputs_[k].value] = cached_[k];
    return;
  }
  computed_ = true;
  // Each output whose captured tensors changed is computed again, with the derived values it needs.
  std::vector<bool> replay(nodes_.size(), false), stale(outputs_.size(), false);
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const auto& o = outputs_[k];
    stale[k] = !cached_[k].defined() || std::any_of(o.sources.begin(), o.sources.end(), [&](int s) { return changed_[s]; });
    if (stale[k])
      for (int p : o.nodes) replay[p] = true;
  }
  for (size_t p = 0; p < nodes_.size(); ++p) {
    if (!replay[p]) continue;
    std::string why;
    const bool held = replay_node(g, g.nodes[nodes_[p]], {&values, symbols}, &why);
    JITC_INTERNAL_ASSERT(held, "a derived value is computed by a checked op: " + why);
  }
  for (size_t k = 0; k < outputs_.size(); ++k) {
    if (stale[k]) cached_[k] = values[outputs_[k].value];
    else values[outputs_[k].value] = cached_[k];
  }
}

}  // namespace jitc::runtime
