// Emitter: appends ATen nodes to a graph being rebuilt by a decomposition (decompositions.cpp,
// gradient_decompositions.cpp), each result contiguous with the dtype and sizes given.
#pragma once
#include "graph/args.h"
#include "graph/graph.h"

#include <jitc/detail/internal_assert.h>

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <functional>
#include <vector>

namespace jitc::inductor {

// Appends nodes to a graph being rebuilt. Each result is contiguous, with the dtype and sizes given: the
// metadata of these few ops is known without running them (their meta kernels are registered from
// Python, not in LibTorch).
class Emitter {
 public:
  // `next_storage`: the first storage id no value of g holds yet (decompose keeps it across nodes: scanning
  // the values for each node made a pass quadratic in the graph's size).
  Emitter(graph::Graph& g, c10::Device device, int32_t next_storage) : g_(g), device_(device), next_storage_(next_storage) {}
  graph::ValueId call(const char* name, const char* overload, std::vector<graph::Arg> args, c10::ScalarType dtype,
                      std::vector<int64_t> sizes) {
    graph::TensorMeta meta;
    meta.dtype = dtype;
    meta.device = device_;
    std::vector<int64_t> strides(sizes.size(), 1);
    for (size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * std::max<int64_t>(sizes[d], 1);
    meta.sizes = graph::constant_shape(sizes.data(), sizes.size());
    meta.strides = graph::constant_shape(strides.data(), strides.size());
    meta.storage_offset = graph::SymExpr::constant(0);
    return call(name, overload, std::move(args), std::move(meta));
  }
  // The same with the result's metadata given whole (a channels-last result).
  graph::ValueId call(const char* name, const char* overload, std::vector<graph::Arg> args, graph::TensorMeta meta) {
    graph::Node n(c10::Dispatcher::singleton().findSchemaOrThrow(name, overload));
    // A view (unsqueeze, squeeze) shares its argument's memory; every other result has memory of its own.
    const bool view = n.op.schema().returns()[0].alias_info() != nullptr;
    const int32_t storage = view ? g_.values[args[0].value].storage : next_storage_++;
    n.args = std::move(args);
    const graph::ValueId v = g_.add_value(std::move(meta), static_cast<int32_t>(g_.nodes.size()), storage);
    n.outputs.push_back({false, {v}});
    g_.nodes.push_back(std::move(n));
    return v;
  }
  // `v` converted to `to` (aten::_to_copy), of these sizes.
  graph::ValueId cast(graph::ValueId v, c10::ScalarType to, std::vector<int64_t> sizes) {
    const c10::IValue none;
    return call("aten::_to_copy", "",
                {graph::value_arg(v), graph::constant_arg(static_cast<int64_t>(to)), graph::constant_arg(none), graph::constant_arg(none),
                 graph::constant_arg(none), graph::constant_arg(false), graph::constant_arg(none)},
                to, std::move(sizes));
  }
  c10::ScalarType dtype_of(graph::ValueId v) const { return g_.values[v].meta.dtype; }
  // `v`, just emitted and not a view, laid out as `traced` (of its sizes) instead of contiguously: the
  // replacement of a traced result keeps the layout eager gave it (a channels-last input's normalization).
  void lay_out_as(graph::ValueId v, const graph::TensorMeta& traced) {
    JITC_INTERNAL_ASSERT(g_.values[v].meta.sizes == traced.sizes, "lay_out_as: the sizes differ");
    g_.values[v].meta.strides = traced.strides;
  }
  // The storage id the next result with memory of its own gets.
  int32_t next_storage() const { return next_storage_; }
  // The node emitted last (to mark an in-place op `mutates`).
  graph::Node& last() { return g_.nodes.back(); }
  // Later readers of `before` (a tensor the emitted nodes wrote in place) read `after` instead.
  void renamed(graph::ValueId before, graph::ValueId after) { renames.emplace_back(before, after); }
  std::vector<std::pair<graph::ValueId, graph::ValueId>> renames;

 private:
  graph::Graph& g_;
  c10::Device device_;
  int32_t next_storage_ = 0;
};

// Emits the nodes that replace `node` of `original` and returns the values standing for its output values
// (in order; kNoValue for an output nothing reads), or nothing, having emitted nothing, where it does not
// apply.
using Decomposer = std::function<std::vector<graph::ValueId>(Emitter&, const graph::Graph& original, const graph::Node& node)>;

// Rebuilds g with every node a decomposer applies to replaced by what it emits; readers of the traced
// outputs read the replacements. g unchanged where none applies.
graph::Graph decompose(const graph::Graph& g, const Decomposer& decomposer);

}  // namespace jitc::inductor
