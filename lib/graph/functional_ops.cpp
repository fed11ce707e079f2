#include "graph/functional_ops.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

namespace jitc::graph {

bool writes(const c10::Argument& a) { return a.alias_info() && a.alias_info()->isWrite(); }

std::optional<c10::OperatorHandle> find_op(const std::string& name, const std::string& overload) {
  return c10::Dispatcher::singleton().findSchema({name, overload});
}

std::optional<c10::OperatorHandle> out_of_place(const c10::OperatorName& in_place) {
  if (in_place.name == "aten::bernoulli_" && in_place.overload_name == "float") return find_op("aten::bernoulli", "p");
  if (in_place.name == "aten::normal_" && in_place.overload_name.empty()) return find_op("aten::normal_functional", "");
  if (in_place.name == "aten::transpose_") return find_op("aten::transpose", "int");
  return find_op(in_place.name.substr(0, in_place.name.size() - 1), in_place.overload_name);
}

std::optional<c10::OperatorHandle> functional_twin(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name();
  if (name.name.back() == '_' || name.name.ends_with("_functional")) return std::nullopt;
  return find_op(name.name + "_functional", name.overload_name);
}

at::Tensor meta_tensor(const TensorMeta& m) {
  std::vector<int64_t> sizes, strides;
  for (const auto& e : m.sizes) sizes.push_back(e.offset);
  for (const auto& e : m.strides) strides.push_back(e.offset);
  return at::empty_strided(sizes, strides, at::TensorOptions().dtype(m.dtype).device(at::kMeta))
      .as_strided(sizes, strides, m.storage_offset.offset);
}

bool elements_apart(const TensorMeta& m) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of dims with more than one element
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    if (m.sizes[d].offset == 0) return true;
    if (m.sizes[d].offset > 1) dims.emplace_back(std::abs(m.strides[d].offset), m.sizes[d].offset);
  }
  std::sort(dims.begin(), dims.end());
  int64_t span = 0;  // the largest offset the smaller dims reach
  for (const auto& [stride, size] : dims) {
    if (stride <= span) return false;
    span += stride * (size - 1);
  }
  return true;
}

}  // namespace jitc::graph
