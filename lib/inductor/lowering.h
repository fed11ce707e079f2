// Lowering: each graph value computed by a lowered op becomes a Loader, a function from an index in the
// value's shape to a scalar expression in the kernel being built (Inductor's inner_fn). Consumers call
// their inputs' loaders with remapped indices, so pointwise chains, broadcasts and views inline into
// one expression; a value stored to a buffer (a graph output, an extern op's input, ...) is read back
// with a strided load instead. The registry maps ATen ops to lowering functions; an op without one
// (mm, conv, RNG...) stays an extern ATen call in the compiled program.
#pragma once
#include "graph/graph.h"
#include "inductor/kernel_builder.h"

#include <c10/core/Scalar.h>

#include <functional>
#include <map>
#include <unordered_map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace jitc::inductor {

// A value's element at an index, in its compute type (float for half and bfloat16: the reader, through
// LoweringContext::at, rounds it as eager's store would).
using Loader = std::function<int(KernelBuilder&, const Index&)>;

// A lowering cannot handle this node (an argument it does not support): the node runs as an extern call.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Why the kernel being built cannot be completed, recorded by the first read that fails (the loaders
// then return placeholders and the scheduler discards the kernel):
// - kNeedsBuffer: `value` must be stored to a buffer by an earlier kernel first (a reduction read at an
//   index that changes inside the element loop);
// - kReadsUnplaced: the kernel reads the buffer of `value`, a stored value that no kernel computes yet
//   (another result of the same node, such as native_layer_norm's statistics, which its output reads):
//   the scheduler places `value` first.
struct BuildFailure {
  enum class Kind { kNeedsBuffer, kReadsUnplaced };
  Kind kind = Kind::kNeedsBuffer;
  graph::ValueId value = graph::kNoValue;
  std::string why;
};

// A tensor argument or a number, as an op's operand.
struct Operand {
  graph::ValueId value = graph::kNoValue;
  c10::Scalar scalar;
  std::optional<graph::SymExpr> symbolic;  // an integer that depends on symbolic sizes
  bool is_tensor() const { return value != graph::kNoValue; }
  // A double argument of the call, read at run time (symbol `symbolic` holds its bits; `scalar` is the
  // traced value, for type promotion).
  bool runtime_double() const { return symbolic && scalar.isFloatingPoint(); }
};

class LoweringContext {
 public:
  explicit LoweringContext(const graph::Graph& graph);

  const graph::Graph& graph() const { return graph_; }
  const graph::TensorMeta& meta(graph::ValueId v) const { return graph_.values[v].meta; }
  const graph::SymShape& sizes(graph::ValueId v) const { return meta(v).sizes; }

  // The element of `v` at `index` in the kernel being built: inlined from its loader, or loaded.
  int at(KernelBuilder& kb, graph::ValueId v, const Index& index);
  Loader input(graph::ValueId v) {
    return [this, v](KernelBuilder& kb, const Index& index) { return at(kb, v, index); };
  }
  // Reads v broadcast to `shape` (right-aligned, size-1 dims repeat).
  Loader broadcast(graph::ValueId v, const graph::SymShape& shape);
  // An operand as a loader of compute type `dtype` over `shape`.
  Loader operand(const Operand& o, const graph::SymShape& shape, c10::ScalarType dtype);
  // A buffer of the kernel being built holding value v (registers it on first use).
  int buffer(KernelBuilder& kb, graph::ValueId v, bool written);

  // Operand i of a node: tensor, number or symbolic integer. Throws Unsupported otherwise.
  Operand operand_of(const graph::Node& n, size_t i) const;
  // Bit i: operand_of read argument i as a run-time double. The scheduler keeps a node whose lowering
  // did not read every such argument this way as an extern op, so no lowering bakes the traced value in.
  mutable uint64_t runtime_doubles_read = 0;
  graph::ValueId tensor_arg(const graph::Node& n, size_t i) const;
  // ATen's type promotion (at::result_type) over tensors and numbers.
  c10::ScalarType result_type(const std::vector<Operand>& operands) const;

  // The first failed read of the kernel being built; begin_kernel clears it.
  std::optional<BuildFailure> failure;
  // Records a failed read (the first one wins) and returns a placeholder of compute type `type` for the
  // loader to return: nothing more of the kernel is inlined once it failed.
  int fail(KernelBuilder& kb, BuildFailure why, c10::ScalarType type);

  // Starts a kernel: clears the per-kernel memo, buffer table, inlined list and failure.
  void begin_kernel(int group);
  // Starts a scheduling attempt over the same lowered values: forgets which kernel group each stored
  // value went to and the kernels' buffer tables (the loaders, views and row dims stay).
  void begin_attempt();
  // Builds `make()` once per kernel for the same key and index (a reduction read twice in one kernel
  // is computed once).
  int memoized(const std::string& key, const Index& index, const std::function<int()>& make);

  // True if v is read from a buffer in the kernel being built (an input, an extern op's output, or a
  // value an earlier kernel stored).
  bool is_buffer(graph::ValueId v) const {
    values_read.push_back(v);
    return !loader[v] || (stored[v] && group[v] != current_group);
  }
  // Loads a view of a buffer straight from that buffer through the view's own strides, following the
  // chain of lowered views up to the first buffer; nullopt if the chain starts at a computed value.
  std::optional<int> load_view(KernelBuilder& kb, graph::ValueId view, const Index& index);

  // Scheduling state, set by the scheduler.
  std::vector<Loader> loader;           // per value: how it is computed (empty: an input or extern output)
  std::vector<char> stored;             // per value: a kernel writes it to its own buffer
  std::vector<int> group;               // per stored value: the kernel group writing it
  std::vector<graph::ValueId> view_of;  // per value made by a lowered view op: the viewed value
  // Per value: its loader checks something at run time (an index read from a tensor, an integer divisor);
  // see checked_reads.h for why the scheduler must know.
  std::vector<char> run_time_checks;
  // Per value of a normalization (softmax, layer_norm...): the dims its statistics reduce over. A kernel
  // whose element loop runs over exactly these dims computes it in one pass, even when they are not the
  // innermost dims of the value (softmax over dim 0).
  std::vector<std::vector<int64_t>> row_dims;
  int current_group = -1;
  std::vector<std::vector<graph::ValueId>> buffer_values;  // per kernel being built: buffer -> value
  std::vector<graph::ValueId> inlined;                     // values computed inline by the kernel being built
  // The values whose scheduling state (loader, stored, group) the kernel being built read: a build is
  // the same wherever these are in the same state (kernel_builds.h).
  mutable std::vector<graph::ValueId> values_read;

 private:
  const graph::Graph& graph_;
  std::map<std::pair<std::string, Index>, int> memo_;
  // Per value inlined into the kernel being built: the reduction loops its computation opened, [first, last).
  std::map<graph::ValueId, std::pair<int, int>> reduction_loops_of_;
};

// Registry: the lowering of a node's op, or nullptr. Lowering functions return one loader per tensor
// output value (in node output order) and throw Unsupported for arguments they do not handle.
using LowerFn = std::function<std::vector<Loader>(LoweringContext&, const graph::Node&)>;
const LowerFn* find_lowering(const graph::Node& node);

// True for ops whose output is a view of their input (kept as index arithmetic, never copied).
bool is_view_lowering(const graph::Node& node);

// Registration, one function per file.
using Registry = std::unordered_map<std::string, LowerFn>;
void register_pointwise(Registry& r);   // lower_pointwise.cpp
void register_reductions(Registry& r);  // lower_reduction.cpp
void register_views(Registry& r);       // lower_views.cpp (views, cat, pad, indexing, factories)
void register_windows(Registry& r);     // lower_windows.cpp (max_pool2d, upsample_nearest2d)
void register_gradients(Registry& r);   // lower_gradients.cpp (the backward formulas of activations)

// The loaders of a pointwise node (lower_pointwise.cpp): each operand read at the output's index in the
// compute type of `compute`, combined by `body` (scalar ops of the kernel being built), cast to the
// output's type. Half and bfloat16 operands enter rounded to `compute` as eager's TensorIterator has them.
using PointwiseBody = std::function<int(KernelBuilder&, const std::vector<int>&, c10::ScalarType)>;
std::vector<Loader> pointwise_loaders(LoweringContext& c, const graph::Node& n, const std::vector<Operand>& operands,
                                      c10::ScalarType compute, const PointwiseBody& body);

}  // namespace jitc::inductor
