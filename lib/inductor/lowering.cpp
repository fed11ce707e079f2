#include "inductor/lowering.h"

#include <fmt/format.h>

#include <unordered_map>

namespace jitc::inductor {

namespace {

using graph::Arg;
using graph::Graph;
using graph::Node;
using graph::ValueId;

std::vector<int64_t> concrete(const graph::SymShape& shape) {
  std::vector<int64_t> out;
  for (const auto& e : shape) {
    if (!e.is_constant()) throw std::runtime_error("symbolic sizes are not lowered yet");
    out.push_back(e.offset);
  }
  return out;
}

// The strides that read `meta` broadcast (right-aligned) over `sizes`.
std::vector<int64_t> broadcast_strides(const graph::TensorMeta& meta, const std::vector<int64_t>& sizes) {
  const auto own_sizes = concrete(meta.sizes);
  const auto own_strides = concrete(meta.strides);
  std::vector<int64_t> strides(sizes.size(), 0);
  const size_t lead = sizes.size() - own_sizes.size();
  for (size_t d = 0; d < own_sizes.size(); ++d)
    strides[lead + d] = own_sizes[d] == 1 && sizes[lead + d] != 1 ? 0 : own_strides[d];
  return strides;
}

class Lowerer {
 public:
  Lowerer(const Graph& g, std::string name) : g_(g) { k_.name = std::move(name); }

  std::optional<FusedGraph> run(std::string* why) {
    try {
      lower();
    } catch (const std::exception& e) {
      if (why) *why = e.what();
      return std::nullopt;
    }
    return std::move(out_);
  }

 private:
  void lower() {
    if (g_.outputs.size() != 1 || g_.outputs[0] == graph::kNoValue) throw std::runtime_error("one tensor result only");
    out_.output = g_.outputs[0];
    const auto& result = g_.values[out_.output].meta;
    k_.sizes = concrete(result.sizes);
    for (const auto& v : g_.values)
      if (v.meta.dtype != c10::kFloat) throw std::runtime_error("only float32 is lowered yet");
    for (size_t i = 0; i < g_.nodes.size(); ++i) node(g_.nodes[i]);
    if (!expr_of_.count(out_.output)) expr_of_[out_.output] = load(out_.output);
    k_.store = {0, concrete(result.strides), 0};
    k_.num_inputs = static_cast<int>(out_.inputs.size());
    k_.result = expr_of_[out_.output];
    out_.kernel = std::move(k_);
  }

  int push(Expr e) {
    k_.body.push_back(e);
    return static_cast<int>(k_.body.size()) - 1;
  }
  int constant(double v) { return push({ScalarOp::kConstant, -1, -1, -1, v}); }

  // The input a value reads (itself, or the input it is a view of).
  size_t input_position(ValueId v) const {
    for (size_t p = 0; p < g_.inputs.size(); ++p)
      if (g_.values[g_.inputs[p].value].storage == g_.values[v].storage) return p;
    throw std::runtime_error(fmt::format("%{} is neither an input nor computed by a pointwise op", v));
  }

  int load(ValueId v) {
    const size_t position = input_position(v);
    auto it = std::find(out_.inputs.begin(), out_.inputs.end(), position);
    const int buffer = static_cast<int>(it - out_.inputs.begin()) + 1;
    if (it == out_.inputs.end()) out_.inputs.push_back(position);
    const auto& base = g_.values[g_.inputs[position].value].meta;
    const auto& meta = g_.values[v].meta;
    k_.loads.push_back({buffer, broadcast_strides(meta, k_.sizes), meta.storage_offset - base.storage_offset});
    return push({ScalarOp::kLoad, -1, -1, static_cast<int>(k_.loads.size()) - 1});
  }

  int operand(const Arg& a) {
    if (a.kind == Arg::Kind::kValue) {
      auto it = expr_of_.find(a.value);
      return it != expr_of_.end() ? it->second : load(a.value);
    }
    if (a.kind == Arg::Kind::kConstant && a.constant.isScalar()) return constant(a.constant.toScalar().toDouble());
    throw std::runtime_error("an operand is neither a tensor nor a number");
  }

  void node(const Node& n) {
    const std::string name = n.op.operator_name().name;
    const auto& args = n.args;
    auto alpha_is_one = [&](size_t i) {
      return args.size() <= i || (args[i].constant.isScalar() && args[i].constant.toScalar().toDouble() == 1.0);
    };
    auto binary = [&](ScalarOp op) { return push({op, operand(args[0]), operand(args[1])}); };
    auto unary = [&](ScalarOp op) { return push({op, operand(args[0])}); };
    int e;
    if (n.mutates || n.checked()) throw std::runtime_error(fmt::format("{} writes or is checked", n.name()));
    if (n.outputs.size() == 1 && !n.outputs[0].values.empty() &&
        g_.values[n.outputs[0].values[0]].storage == g_.values[input_position_or_self(args)].storage)
      return;  // a view of an input: loads read through its strides
    if ((name == "aten::add" || name == "aten::sub") && !alpha_is_one(2))
      throw std::runtime_error(fmt::format("{} with alpha != 1 (ATen fuses it into an FMA) is not lowered yet", n.name()));
    if (name == "aten::add") e = binary(ScalarOp::kAdd);
    else if (name == "aten::sub") e = binary(ScalarOp::kSub);
    else if (name == "aten::mul") e = binary(ScalarOp::kMul);
    else if (name == "aten::div" && args.size() == 2) e = binary(ScalarOp::kDiv);
    else if (name == "aten::maximum") e = binary(ScalarOp::kMaximum);
    else if (name == "aten::minimum") e = binary(ScalarOp::kMinimum);
    else if (name == "aten::neg") e = unary(ScalarOp::kNeg);
    else if (name == "aten::exp") e = unary(ScalarOp::kExp);
    else if (name == "aten::relu") e = unary(ScalarOp::kRelu);
    else if (name == "aten::sigmoid") e = unary(ScalarOp::kSigmoid);
    else throw std::runtime_error(fmt::format("{} has no lowering yet", n.name()));
    expr_of_[n.outputs[0].values[0]] = e;
  }

  // For view detection: the value of the node's first tensor argument (or an impossible one).
  ValueId input_position_or_self(const std::vector<Arg>& args) const {
    for (const auto& a : args)
      if (a.kind == Arg::Kind::kValue) return a.value;
    return 0;
  }

  const Graph& g_;
  PointwiseKernel k_;
  FusedGraph out_;
  std::unordered_map<ValueId, int> expr_of_;
};

}  // namespace

std::optional<FusedGraph> lower_to_one_kernel(const Graph& graph, const std::string& name, std::string* why_not) {
  return Lowerer(graph, name).run(why_not);
}

}  // namespace jitc::inductor
