#include "graph/element_views.h"

#include "graph/args.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <iterator>
#include <string>

namespace jitc::graph {

// Element k of a list view (split, chunk, unbind and their unsafe_ and _with_sizes forms) as the single
// view that makes it, slice(base, dim, start, end) or select(base, dim, k): reads rebuild it and writes
// scatter through it as through any slice (an LSTM or GRU cell's in-place gate activations on chunks of
// one buffer). nullopt where the dim or the sizes are not static, or for other list views.
std::optional<Node> element_view(const Graph& raw, const Node& list_view, size_t k) {
  const std::string& name = list_view.op.operator_name().name;
  static const char* const kSplits[] = {"aten::split",        "aten::unsafe_split",     "aten::chunk",
                                        "aten::unsafe_chunk", "aten::split_with_sizes", "aten::unsafe_split_with_sizes"};
  const bool unbind = name == "aten::unbind";
  if (!unbind && std::none_of(std::begin(kSplits), std::end(kSplits), [&](const char* s) { return name == s; })) return std::nullopt;
  const size_t dim_arg = unbind ? 1 : 2;
  if (list_view.outputs.size() != 1 || list_view.args.size() <= dim_arg || list_view.args[0].kind != Arg::Kind::kValue ||
      !list_view.args[dim_arg].constant.isInt())
    return std::nullopt;
  const auto rank = static_cast<int64_t>(raw.values[list_view.args[0].value].meta.sizes.size());
  int64_t dim = list_view.args[dim_arg].constant.toInt();
  dim = dim < 0 ? dim + rank : dim;
  if (dim < 0 || dim >= rank) return std::nullopt;
  const auto& elements = list_view.outputs[0].values;
  Node view(c10::Dispatcher::singleton().findSchemaOrThrow(unbind ? "aten::select" : "aten::slice", unbind ? "int" : "Tensor"));
  view.outputs.push_back({false, {elements[k]}});
  if (unbind) {
    view.args = {list_view.args[0], constant_arg(dim), constant_arg(static_cast<int64_t>(k))};
    return view;
  }
  int64_t start = 0;
  for (size_t j = 0; j < k; ++j) {
    const SymExpr& size = raw.values[elements[j]].meta.sizes[static_cast<size_t>(dim)];
    if (!size.is_constant()) return std::nullopt;
    start += size.offset;
  }
  const SymExpr& size = raw.values[elements[k]].meta.sizes[static_cast<size_t>(dim)];
  if (!size.is_constant()) return std::nullopt;
  view.args = {list_view.args[0], constant_arg(dim), constant_arg(start), constant_arg(start + size.offset), constant_arg(int64_t{1})};
  return view;
}

}  // namespace jitc::graph
