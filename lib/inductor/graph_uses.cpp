#include "inductor/graph_uses.h"

#include <algorithm>

namespace jitc::inductor {

using graph::ValueId;

std::vector<ValueId> node_outputs(const graph::Node& n) {
  std::vector<ValueId> out;
  for (const auto& o : n.outputs) out.insert(out.end(), o.values.begin(), o.values.end());
  return out;
}

std::vector<ValueId> node_tensor_args(const graph::Node& n) {
  std::vector<ValueId> out;
  for (const auto& a : n.args) {
    if (a.kind == graph::Arg::Kind::kValue) out.push_back(a.value);
    for (ValueId v : a.list)
      if (v != graph::kNoValue) out.push_back(v);
  }
  return out;
}

graph::SymShape without_ones(const graph::SymShape& s) {
  graph::SymShape out;
  for (const auto& e : s)
    if (!e.is_one()) out.push_back(e);
  return out;
}

bool has_no_elements(const graph::SymShape& s) {
  return std::any_of(s.begin(), s.end(), [](const graph::SymExpr& e) { return e.is_constant() && e.offset == 0; });
}

bool supported_dtype(c10::ScalarType t) {
  using c10::ScalarType;
  return t == ScalarType::Float || t == ScalarType::Double || t == ScalarType::Half || t == ScalarType::BFloat16 || t == ScalarType::Long ||
         t == ScalarType::Int || t == ScalarType::Short || t == ScalarType::Char || t == ScalarType::Byte || t == ScalarType::Bool;
}

uint64_t runtime_double_args(const graph::Node& n) {
  uint64_t mask = 0;
  for (size_t i = 0; i < n.args.size() && i < 64; ++i)
    if (!n.args[i].symbolic.empty() && n.args[i].constant.isDouble()) mask |= uint64_t{1} << i;
  return mask;
}

bool read_after(const graph::Graph& g, ValueId v, size_t i) {
  if (std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end()) return true;
  for (size_t k = i + 1; k < g.nodes.size(); ++k) {
    const auto args = node_tensor_args(g.nodes[k]);
    if (std::find(args.begin(), args.end(), v) != args.end()) return true;
  }
  return false;
}

std::vector<Step> with_releases(const graph::Graph& g, const std::vector<Step>& steps, const std::vector<KernelLaunch>& kernels) {
  std::vector<int> last(g.values.size(), -1);
  std::vector<char> releasable(g.values.size(), 0);
  for (size_t s = 0; s < steps.size(); ++s) {
    std::vector<ValueId> used;
    if (steps[s].kind == Step::Kind::kKernel) used = kernels[steps[s].index].buffers;
    else {
      used = node_tensor_args(g.nodes[steps[s].index]);
      for (ValueId v : node_outputs(g.nodes[steps[s].index])) used.push_back(v), releasable[v] = 1;
    }
    if (steps[s].kind == Step::Kind::kKernel)
      for (ValueId v : kernels[steps[s].index].outputs) releasable[v] = 1;
    for (ValueId v : used) last[v] = static_cast<int>(s);
  }
  for (const auto& in : g.inputs)
    if (in.owned) releasable[in.value] = 1;
  for (ValueId v : g.outputs)
    if (v != graph::kNoValue) releasable[v] = 0;
  std::vector<std::vector<ValueId>> after(steps.size());
  for (size_t v = 0; v < g.values.size(); ++v)
    if (releasable[v] && last[v] >= 0) after[last[v]].push_back(static_cast<ValueId>(v));
  std::vector<Step> out;
  for (size_t s = 0; s < steps.size(); ++s) {
    out.push_back(steps[s]);
    for (ValueId v : after[s]) out.push_back({Step::Kind::kRelease, v});
  }
  return out;
}

}  // namespace jitc::inductor
