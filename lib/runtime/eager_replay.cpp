#include "runtime/eager_replay.h"

#include "graph/passes.h"

#include <ATen/core/stack.h>
#include <ATen/ops/empty_strided.h>
#include <c10/util/bit_cast.h>
#include <fmt/format.h>

#include <limits>

#include <sstream>

namespace jitc::runtime {

namespace {

c10::IValue materialize(const graph::Arg& arg, const int64_t* symbols) {
  if (arg.symbolic.empty()) return arg.constant;
  // A double argument made dynamic: its symbol holds the call's value as bits (see SymbolValues::real).
  if (arg.constant.isDouble()) return c10::IValue(c10::bit_cast<double>(symbols[arg.symbolic[0].factors[0]]));
  if (!arg.constant.isIntList()) return c10::IValue(arg.symbolic[0].eval(symbols));
  std::vector<int64_t> values;
  values.reserve(arg.symbolic.size());
  for (const auto& e : arg.symbolic) values.push_back(e.eval(symbols));
  return c10::IValue(values);
}

void push_args(const graph::Node& node, const ReplayInputs& in, torch::jit::Stack& stack) {
  auto& values = *in.values;
  for (const auto& arg : node.args) {
    switch (arg.kind) {
      case graph::Arg::Kind::kValue: stack.emplace_back(values[arg.value]); break;
      case graph::Arg::Kind::kValueList: {
        c10::List<at::Tensor> list;
        list.reserve(arg.list.size());
        for (auto v : arg.list) list.push_back(values[v]);
        stack.emplace_back(std::move(list));
        break;
      }
      case graph::Arg::Kind::kOptionalValueList: {
        c10::List<std::optional<at::Tensor>> list;
        for (auto v : arg.list) list.push_back(v == graph::kNoValue ? std::optional<at::Tensor>() : values[v]);
        stack.emplace_back(std::move(list));
        break;
      }
      case graph::Arg::Kind::kConstant: stack.push_back(materialize(arg, in.symbols)); break;
    }
  }
}

void take_outputs(const graph::Node& node, torch::jit::Stack& stack, std::vector<at::Tensor>& values) {
  for (size_t r = 0; r < node.outputs.size(); ++r) {
    const auto& out = node.outputs[r];
    if (out.values.empty()) continue;
    if (!out.is_list) {
      values[out.values[0]] = std::move(stack[r]).toTensor();
      continue;
    }
    auto list = stack[r].toTensorList();
    for (size_t k = 0; k < out.values.size(); ++k) values[out.values[k]] = list.get(k);
  }
}

std::string show(const c10::IValue& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// A graph break's result must be the traced one: the same scalar, or tensors of the same sizes.
bool break_holds(const graph::Graph& g, const graph::Node& node, const torch::jit::Stack& stack, const std::vector<at::Tensor>& values,
                 const int64_t* symbols, std::string* why) {
  if (!node.expected.isNone()) {
    if (graph::same_constant(stack[0], node.expected)) return true;
    if (why) *why = fmt::format("{} returned {}, traced {}", node.name(), show(stack[0]), show(node.expected));
    return false;
  }
  for (const auto& out : node.outputs)
    for (auto v : out.values) {
      const auto& want = g.values[v].meta.sizes;
      const auto got = values[v].sizes();
      bool same = got.size() == want.size();
      for (size_t d = 0; same && d < want.size(); ++d) same = got[d] == want[d].eval(symbols);
      if (same) continue;
      if (why) *why = fmt::format("{} returned a tensor of sizes {}, traced {}", node.name(), c10::str(got), graph::to_string(want));
      return false;
    }
  return true;
}

// A 4-D tensor's memory format where its strides say one and only one.
enum class Layout { kOther, kContiguous, kChannelsLast };

Layout layout_of(const c10::IValue& v) {
  if (!v.isTensor()) return Layout::kOther;
  const at::Tensor& t = v.toTensor();
  if (!t.defined() || t.dim() != 4) return Layout::kOther;
  const bool plain = t.is_contiguous(), channels_last = t.is_contiguous(at::MemoryFormat::ChannelsLast);
  if (plain == channels_last) return Layout::kOther;
  return plain ? Layout::kContiguous : Layout::kChannelsLast;
}

// Convolutions read each operand in its own layout (a weight stays in its own): their operands may differ.
bool reads_any_layouts(const graph::Node& node) {
  const std::string& name = node.op.operator_name().name;
  return name.find("conv") != std::string::npos || name.rfind("mkldnn::", 0) == 0;
}

// ATen kernels that reject channels-last operands eager never gives them: nll_loss2d_backward allocates
// its result in self's layout and then requires it contiguous ("grad_input must be contiguous", ATen 2.11).
bool reads_contiguous_only(const graph::Node& node) { return node.op.operator_name().name == "aten::nll_loss2d_backward"; }

// jitc's layout passes (inductor/channels_last.h) may give an extern op 4-D operands in layouts eager
// would not (a saved activation channels-last, a gradient computed contiguous), and ATen kernels assume
// what eager gives them: the CPU's native_group_norm_backward reads dY in X's layout and returns wrong
// gradients where they differ; nll_loss2d_backward raises on a channels-last self. Such an op gets its 4-D
// operands in one layout: contiguous for the ops above, else the first operand's. Values are unchanged,
// only copies' layouts.
void agree_on_layout(const graph::Node& node, torch::jit::Stack& stack, size_t first) {
  Layout target = Layout::kOther;
  bool mixed = false;
  for (size_t i = first; i < stack.size(); ++i) {
    const Layout l = layout_of(stack[i]);
    if (l == Layout::kOther) continue;
    if (target == Layout::kOther) target = l;
    mixed = mixed || l != target;
  }
  if (target == Layout::kChannelsLast && reads_contiguous_only(node)) target = Layout::kContiguous, mixed = true;
  if (!mixed || reads_any_layouts(node)) return;
  const auto format = target == Layout::kChannelsLast ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  for (size_t i = first; i < stack.size(); ++i)
    if (layout_of(stack[i]) != Layout::kOther) stack[i] = stack[i].toTensor().contiguous(format);
}

}  // namespace

namespace {

// The per-thread stack a replay reuses (a hit allocates none); a replay nested inside another one (an
// op that calls a compiled function) gets its own. Cleared on every exit, errors included.
class StackLease {
 public:
  StackLease() : stack_(depth_++ == 0 ? shared_ : own_) {}
  ~StackLease() {
    stack_.clear();
    --depth_;
  }
  torch::jit::Stack& get() { return stack_; }

 private:
  static thread_local int depth_;
  static thread_local torch::jit::Stack shared_;
  torch::jit::Stack own_;
  torch::jit::Stack& stack_;
};
thread_local int StackLease::depth_ = 0;
thread_local torch::jit::Stack StackLease::shared_;

}  // namespace

bool replay_node(const graph::Graph& g, const graph::Node& node, const ReplayInputs& in, std::string* why) {
  StackLease lease;
  torch::jit::Stack& stack = lease.get();
  const size_t first = stack.size();
  push_args(node, in, stack);
  agree_on_layout(node, stack, first);
  node.op.callBoxed(stack);
  take_outputs(node, stack, *in.values);
  return !node.checked() || break_holds(g, node, stack, *in.values, in.symbols, why);
}

void restride_outputs(const graph::Graph& g, const graph::Node& node, std::vector<at::Tensor>& values, const int64_t* symbols) {
  const auto& returns = node.op.schema().returns();
  for (size_t r = 0; r < node.outputs.size() && r < returns.size(); ++r) {
    if (node.outputs[r].is_list || returns[r].alias_info()) continue;
    for (graph::ValueId v : node.outputs[r].values)
      if (values[v].defined()) values[v] = in_layout(values[v], g.values[v].meta, symbols);
  }
}

at::Tensor in_layout(const at::Tensor& t, const graph::TensorMeta& meta, const int64_t* symbols) {
  const graph::SymShape& traced = meta.strides;
  if (traced.size() != static_cast<size_t>(t.dim())) return t;
  c10::SmallVector<int64_t, 8> strides;  // no allocation on the hot path of a compiled call
  bool same = true, exact = true;
  for (size_t d = 0; d < traced.size(); ++d) {
    strides.push_back(traced[d].eval(symbols));
    const bool equal = t.stride(static_cast<int64_t>(d)) == strides.back();
    same = same && (t.size(static_cast<int64_t>(d)) <= 1 || equal);
    exact = exact && equal;
  }
  if (!same) return at::empty_strided(t.sizes(), strides, t.options()).copy_(t);
  // The same memory; a dim of size 1 whose stride differs gets meta's, so that a compiled function this
  // result reaches sees the strides its guards were traced with (the gradient of a depthwise weight,
  // [C, 1, 3, 3], from oneDNN's channels-last backward).
  return exact ? t : t.as_strided(t.sizes(), strides, t.storage_offset());
}

namespace {

// Per value, the last node that reads it; outputs and inputs (but owned ones) are never released (kLast).
std::vector<int32_t> last_uses(const graph::Graph& g) {
  constexpr int32_t kLast = std::numeric_limits<int32_t>::max();
  std::vector<int32_t> last(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& a : g.nodes[i].args) {
      if (a.kind == graph::Arg::Kind::kValue) last[a.value] = static_cast<int32_t>(i);
      for (graph::ValueId v : a.list)
        if (v != graph::kNoValue) last[v] = static_cast<int32_t>(i);
    }
  for (graph::ValueId v : g.outputs)
    if (v != graph::kNoValue) last[v] = kLast;
  for (const auto& in : g.inputs)
    if (!in.owned) last[in.value] = kLast;
  return last;
}

}  // namespace

bool replay(const graph::Graph& g, const ReplayInputs& in, std::string* why) {
  ExcludeBelowAutograd below;
  // Intermediates are dropped after their last reader, as eager frees them: a long graph replayed (a
  // training forward with batch norm) would otherwise hold every activation until it ends.
  const std::vector<int32_t> last = last_uses(g);
  std::vector<at::Tensor>& values = *in.values;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!replay_node(g, g.nodes[i], in, why)) return false;
    if (in.traced_layouts) restride_outputs(g, g.nodes[i], values, in.symbols);
    for (const auto& a : g.nodes[i].args) {
      if (a.kind == graph::Arg::Kind::kValue && last[a.value] == static_cast<int32_t>(i)) values[a.value].reset();
      for (graph::ValueId v : a.list)
        if (v != graph::kNoValue && last[v] == static_cast<int32_t>(i)) values[v].reset();
    }
    for (const auto& o : g.nodes[i].outputs)
      for (graph::ValueId v : o.values)
        if (last[v] < 0) values[v].reset();  // nothing reads it
  }
  return true;
}

}  // namespace jitc::runtime
