// graph::Graph: the SSA record of one trace. Values are tensors with exact metadata (sizes and strides
// as SymExprs); nodes hold the dispatcher's OperatorHandle and their constant arguments, so any node can
// be replayed through the dispatcher. In-place ops and views are recorded as they happened: an in-place
// op defines a new value (the next version of its target), and `storage` groups values that share memory.
// Graph breaks are kBreak nodes: data-dependent ops whose result is checked on replay.
#pragma once
#include "graph/sym_expr.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <c10/util/intrusive_ptr.h>

#include <optional>
#include <string>
#include <vector>

namespace jitc::graph {

using ValueId = int32_t;
constexpr ValueId kNoValue = -1;

struct TensorMeta {
  c10::ScalarType dtype = c10::ScalarType::Float;
  c10::Device device{c10::kCPU};
  SymShape sizes;
  SymShape strides;
  SymExpr storage_offset;  // a view from the end of a dynamic dim starts at a symbolic offset
};

struct Value {
  TensorMeta meta;
  int32_t producer = -1;  // node index; -1 for graph inputs
  int32_t storage = -1;   // values with the same storage id alias the same memory
};

enum class InputKind {
  kArgument,  // a tensor argument of the call (leaf index `leaf`)
  kCaptured,  // a tensor the callable captured (module parameter, closure): read by reference each call
  kConstant,  // a tensor created inside the callable without an op (from_blob): owned by the graph
};

struct Input {
  InputKind kind = InputKind::kArgument;
  ValueId value = kNoValue;
  int leaf = -1;
  std::string name;
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> captured{
      c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>()};  // kCaptured
  at::Tensor constant;                                                   // kConstant
  // A program may drop its reference after the last read (a backward graph's saved values and tangents,
  // which nothing but the call holds), so that their memory frees as the graph runs, as eager's does.
  bool owned = false;
};

struct Arg {
  enum class Kind { kValue, kValueList, kOptionalValueList, kConstant };
  Kind kind = Kind::kConstant;
  ValueId value = kNoValue;
  std::vector<ValueId> list;  // kValueList / kOptionalValueList (kNoValue = None)
  c10::IValue constant;
  // For an int, Scalar-int or int[] constant that depends on symbolic sizes: one SymExpr per element.
  std::vector<SymExpr> symbolic;
};

struct NodeOutput {
  bool is_list = false;
  std::vector<ValueId> values;  // empty for a non-tensor return
};

enum class NodeKind {
  kOp,
  kBreak,  // data-dependent: on replay its result must equal the traced one (scalar value or tensor sizes)
  // Computed from captured tensors only (a batch norm folded into its convolution's weight, a prepacked
  // weight), once per version of them: runtime/derived_values.h.
  kDerived,
};

struct Node {
  explicit Node(c10::OperatorHandle handle) : op(std::move(handle)) {}
  c10::OperatorHandle op;
  NodeKind kind = NodeKind::kOp;
  std::vector<Arg> args;
  std::vector<NodeOutput> outputs;
  // The scalar result seen while tracing, for a kBreak or any op returning a bool/int/float that the
  // callable may have branched on (is_same_size, is_pinned...): replays check it.
  c10::IValue expected;
  bool mutates = false;  // writes one of its arguments (in-place or out=)

  std::string name() const;                                                        // "aten::add.Tensor"
  bool checked() const { return kind == NodeKind::kBreak || !expected.isNone(); }  // replay may fail here
};

// Ops that write some of their tensor arguments without saying so in their schema (batch_norm updates
// its running statistics in training mode). The tracer marks their nodes `mutates`; passes must then
// assume every tensor argument is written.
bool writes_unannotated(const c10::OperatorHandle& op);
// Whether a call with these arguments writes (batch_norm in inference mode does not).
bool writes_unannotated(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args);
inline bool writes_unannotated(const Node& n) { return writes_unannotated(n.op); }

struct Graph {
  std::vector<Input> inputs;
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<ValueId> outputs;  // kNoValue for a result leaf that is not a tensor
  int num_symbols = 0;

  ValueId add_value(TensorMeta meta, int32_t producer, int32_t storage) {
    values.push_back({std::move(meta), producer, storage});
    return static_cast<ValueId>(values.size() - 1);
  }
  int break_count() const;
  int op_count() const;
};

}  // namespace jitc::graph
