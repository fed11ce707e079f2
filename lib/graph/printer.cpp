#include "graph/passes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <sstream>

namespace jitc::graph {

const char* dtype_name(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat: return "f32";
    case c10::kDouble: return "f64";
    case c10::kHalf: return "f16";
    case c10::kBFloat16: return "bf16";
    case c10::kLong: return "i64";
    case c10::kInt: return "i32";
    case c10::kShort: return "i16";
    case c10::kChar: return "i8";
    case c10::kByte: return "u8";
    case c10::kBool: return "b8";
    default: return c10::toString(dtype);
  }
}

namespace {

std::string meta_text(const TensorMeta& m) {
  std::string s = fmt::format("{}{}{{", dtype_name(m.dtype), to_string(m.sizes));
  for (size_t i = 0; i < m.strides.size(); ++i) s += (i ? ", " : "") + m.strides[i].to_string();
  s += "}";
  if (m.storage_offset != SymExpr::constant(0)) s += fmt::format("+{}", m.storage_offset.to_string());
  if (!m.device.is_cpu()) s += " " + m.device.str();
  return s;
}

std::string constant_text(const Arg& a) {
  if (!a.symbolic.empty()) {
    // A double argument read at run time differs from an int symbol in the same place: the text is the
    // compile cache's key.
    if (a.constant.isDouble()) return fmt::format("double({})", a.symbolic[0].to_string());
    if (!a.constant.isIntList()) return a.symbolic[0].to_string();
    return to_string(a.symbolic);
  }
  std::ostringstream os;
  if (a.constant.isTensor() && !a.constant.toTensor().defined()) return "None";
  if (a.constant.isString()) return fmt::format("\"{}\"", a.constant.toStringRef());
  os << a.constant;
  return os.str();
}

std::string list_text(const std::vector<ValueId>& list) {
  std::string s = "[";
  for (size_t i = 0; i < list.size(); ++i) {
    s += i ? ", " : "";
    s += list[i] == kNoValue ? "None" : fmt::format("%{}", list[i]);
  }
  return s + "]";
}

std::string arg_text(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::kValue: return fmt::format("%{}", a.value);
    case Arg::Kind::kValueList:
    case Arg::Kind::kOptionalValueList: return list_text(a.list);
    case Arg::Kind::kConstant: return constant_text(a);
  }
  return "?";
}

const char* input_kind(InputKind k, bool owned) {
  if (owned) return k == InputKind::kArgument ? "arg owned" : "owned";
  switch (k) {
    case InputKind::kArgument: return "arg";
    case InputKind::kCaptured: return "captured";
    case InputKind::kConstant: return "constant";
  }
  return "?";
}

std::string node_text(const Graph& g, const Node& n) {
  std::vector<std::string> outs;
  for (const auto& o : n.outputs) {
    if (o.is_list) {
      outs.push_back(list_text(o.values));
      continue;
    }
    for (ValueId v : o.values) outs.push_back(fmt::format("%{}: {}", v, meta_text(g.values[v].meta)));
  }
  std::vector<std::string> args;
  for (const auto& a : n.args) args.push_back(arg_text(a));
  std::string s = "  ";
  if (!outs.empty()) s += fmt::format("{} = ", fmt::join(outs, ", "));
  s += fmt::format("{}({})", n.name(), fmt::join(args, ", "));
  std::ostringstream expected;
  if (!n.expected.isNone()) expected << n.expected;
  if (n.kind == NodeKind::kBreak) s += n.expected.isNone() ? "  # graph break: sizes guarded" : "  # graph break: == " + expected.str();
  else if (!n.expected.isNone()) s += "  # checked: == " + expected.str();
  if (n.kind == NodeKind::kDerived) s += "  # derived: once per version of the captured tensors it reads";
  return s;
}

}  // namespace

std::string to_text(const Graph& g) {
  std::vector<std::string> ins;
  for (const auto& in : g.inputs)
    ins.push_back(fmt::format("%{}: {} {}", in.value, meta_text(g.values[in.value].meta), input_kind(in.kind, in.owned)));
  std::string s = fmt::format("graph({}):\n", fmt::join(ins, ", "));
  for (const auto& n : g.nodes) s += node_text(g, n) + "\n";
  std::vector<std::string> outs;
  for (ValueId v : g.outputs) outs.push_back(v == kNoValue ? "_" : fmt::format("%{}", v));
  return s + fmt::format("  return ({})\n", fmt::join(outs, ", "));
}

}  // namespace jitc::graph
