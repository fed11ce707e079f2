#include "inductor/graph_uses.h"

#include "inductor/backend.h"
#include "inductor/lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <unordered_set>

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

bool is_view_of_first_input(const graph::Graph& g, const graph::Node& n, graph::ValueId v) {
  if (!is_view_lowering(n)) return false;
  const std::vector<graph::ValueId> args = node_tensor_args(n);
  if (args.empty()) return false;
  // Of the ops whose schema may alias, these copy where a view cannot do: their storage ids say which
  // they did. The others always view (passes that rewrite graphs keep no such promise on storage ids).
  static const auto& may_copy =
      *new std::unordered_set<std::string>{"aten::contiguous", "aten::reshape", "aten::flatten", "aten::to", "aten::type_as"};
  return !may_copy.count(n.op.operator_name().name) || g.values[v].storage == g.values[args[0]].storage;
}

std::vector<std::vector<int>> readers_by_value(const graph::Graph& g) {
  std::vector<std::vector<int>> readers(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : node_tensor_args(g.nodes[i])) readers[v].push_back(static_cast<int>(i));
  return readers;
}

std::string unsupported_values(const graph::Graph& g, const graph::Node& n) {
  std::vector<ValueId> values = node_tensor_args(n);
  const auto outs = node_outputs(n);
  values.insert(values.end(), outs.begin(), outs.end());
  for (ValueId v : values) {
    const auto& m = g.values[v].meta;
    if (!supported_dtype(m.dtype)) return fmt::format("dtype {} is not lowered", c10::toString(m.dtype));
    if (!backend_for(m.device.type())) return fmt::format("device {} has no backend", m.device.str());
    // A zero-dim CPU tensor next to CUDA tensors is a scalar: read on the host, not from a kernel.
    if (m.device != g.values[values.front()].meta.device) return "its tensors are on different devices";
  }
  return {};
}

bool contiguous_static(const graph::TensorMeta& m) {
  int64_t expected = 1;
  for (size_t d = m.sizes.size(); d-- > 0;) {
    const graph::SymExpr& size = m.sizes[d];
    if (!size.is_constant()) return false;
    if (size.offset != 1 && !(m.strides[d].is_constant() && m.strides[d].offset == expected)) return false;
    expected *= size.offset;
  }
  return true;
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

std::vector<ValueId> same_result_of_every_such_node(const graph::Graph& g, ValueId value) {
  const graph::Node& producer = g.nodes[g.values[value].producer];
  const std::vector<ValueId> results = node_outputs(producer);
  const size_t index = std::find(results.begin(), results.end(), value) - results.begin();
  std::vector<ValueId> found;
  for (const graph::Node& n : g.nodes) {
    if (!(n.op.operator_name() == producer.op.operator_name())) continue;
    const std::vector<ValueId> siblings = node_outputs(n);
    if (siblings.size() == results.size()) found.push_back(siblings[index]);
  }
  return found;
}

namespace {

// What two like nodes share: the op, each argument's dtype and sizes or constant, and the sorted ops
// that read each result.
std::string node_signature(const graph::Graph& g, const graph::Node& n, const std::vector<std::vector<int>>& readers) {
  std::ostringstream key;
  key << n.op.operator_name() << '(';
  auto tensor = [&](ValueId v) {
    if (v == graph::kNoValue) return void(key << "None");
    key << c10::toString(g.values[v].meta.dtype) << graph::to_string(g.values[v].meta.sizes);
  };
  for (const graph::Arg& a : n.args) {
    if (a.kind == graph::Arg::Kind::kValue) tensor(a.value);
    else if (a.kind == graph::Arg::Kind::kConstant) key << a.constant;
    for (ValueId v : a.list) tensor(v);
    key << ", ";
  }
  key << ") ->";
  for (ValueId out : node_outputs(n)) {
    std::vector<std::string> ops;
    for (int r : readers[out]) ops.push_back(toString(g.nodes[r].op.operator_name()));
    std::sort(ops.begin(), ops.end());
    key << ' ';
    tensor(out);
    for (const auto& op : ops) key << ' ' << op;
  }
  return key.str();
}

}  // namespace

std::vector<ValueId> same_result_of_every_like_node(const graph::Graph& g, ValueId value) {
  const auto readers = readers_by_value(g);
  const std::string like = node_signature(g, g.nodes[g.values[value].producer], readers);
  std::vector<ValueId> found;
  for (ValueId v : same_result_of_every_such_node(g, value))
    if (node_signature(g, g.nodes[g.values[v].producer], readers) == like) found.push_back(v);
  return found;
}

std::vector<int> last_readers(const graph::Graph& g) {
  std::vector<int> last(g.values.size(), -1);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (ValueId v : node_tensor_args(g.nodes[k])) last[v] = static_cast<int>(k);
  for (ValueId v : g.outputs)
    if (v != graph::kNoValue) last[v] = static_cast<int>(g.nodes.size());
  return last;
}

std::vector<char> freed_when_dropped(const graph::Graph& g) {
  std::vector<char> freeable(g.values.size(), 0);
  std::map<int32_t, int> values_of_storage;
  for (const auto& value : g.values) ++values_of_storage[value.storage];
  for (size_t v = 0; v < g.values.size(); ++v) freeable[v] = g.values[v].producer >= 0 && values_of_storage[g.values[v].storage] == 1;
  for (const auto& in : g.inputs) freeable[in.value] = in.owned && values_of_storage[g.values[in.value].storage] == 1;
  for (ValueId v : g.outputs)
    if (v != graph::kNoValue) freeable[v] = 0;
  return freeable;
}

ReadIndex read_index(const graph::Graph& g) {
  ReadIndex index{last_readers(g), readers_by_value(g), {}};
  for (size_t v = 0; v < g.values.size(); ++v) {
    const int32_t storage = g.values[v].storage;
    if (storage < 0) continue;
    if (static_cast<size_t>(storage) >= index.values_of_storage.size()) index.values_of_storage.resize(storage + 1);
    index.values_of_storage[storage].push_back(static_cast<ValueId>(v));
  }
  return index;
}

std::vector<ValueId> read_across_write(const graph::Graph& g, size_t i, const ReadIndex& index, const std::function<bool(size_t)>& lowered,
                                       const std::function<bool(ValueId)>& computed) {
  // The values reading the written memory: those living in it, then the results of lowered nodes before i
  // that read one of them.
  std::vector<ValueId> reading;
  std::vector<char> seen(g.values.size(), 0);
  for (ValueId a : node_tensor_args(g.nodes[i])) {
    const int32_t storage = g.values[a].storage;
    if (storage < 0 || static_cast<size_t>(storage) >= index.values_of_storage.size()) continue;
    for (ValueId v : index.values_of_storage[storage])
      if (!seen[v]) seen[v] = 1, reading.push_back(v);
  }
  for (size_t k = 0; k < reading.size(); ++k)
    for (int r : index.readers[reading[k]]) {
      if (r >= static_cast<int>(i) || !lowered(static_cast<size_t>(r))) continue;
      for (ValueId w : node_outputs(g.nodes[r]))
        if (w != graph::kNoValue && !seen[w]) seen[w] = 1, reading.push_back(w);
    }
  std::vector<ValueId> found;
  for (ValueId v : reading) {
    const int p = g.values[v].producer;
    if (p >= 0 && p < static_cast<int>(i) && lowered(static_cast<size_t>(p)) && index.last_reader[v] > static_cast<int>(i) && computed(v))
      found.push_back(v);
  }
  // In plan order, as the nodes computing them come.
  std::sort(found.begin(), found.end(),
            [&](ValueId a, ValueId b) { return std::pair(g.values[a].producer, a) < std::pair(g.values[b].producer, b); });
  return found;
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
