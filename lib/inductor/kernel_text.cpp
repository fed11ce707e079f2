#include "inductor/kernel_ir.h"

#include <fmt/format.h>

namespace jitc::inductor {

const char* op_name(ScalarOp op) {
  static const char* const names[] = {
      "var",   "sym",   "const", "load",     "store", "cast",  "round_to", "where", "neg",   "abs",   "exp",    "exp2",  "expm1", "log",
      "log2",  "log10", "log1p", "sqrt",     "rsqrt", "sin",   "cos",      "tan",   "asin",  "acos",  "atan",   "sinh",  "cosh",  "tanh",
      "asinh", "acosh", "atanh", "erf",      "erfc",  "floor", "ceil",     "round", "trunc", "not",   "bitnot", "isnan", "sign",  "add",
      "sub",   "mul",   "div",   "floordiv", "rem",   "pow",   "atan2",    "max",   "min",   "and",   "or",     "xor",   "shl",   "shr",
      "eq",    "ne",    "lt",    "le",       "gt",    "ge",    "fmod",     "fma",   "check", "reduce"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(ScalarOp::kReduce) + 1);
  return names[static_cast<size_t>(op)];
}

const char* reduce_name(ReduceKind kind) {
  static const char* const names[] = {"sum", "prod", "max", "min", "argmax", "argmin", "any", "all"};
  return names[static_cast<size_t>(kind)];
}

namespace {

const char* kind_name(LoopVar::Kind kind) {
  return kind == LoopVar::Kind::kOuter ? "outer" : kind == LoopVar::Kind::kInner ? "inner" : "reduction";
}

std::string operand(int e) { return e >= 0 ? fmt::format("e{}", e) : std::string(); }

std::string expr_text(const Kernel& k, size_t i) {
  const Expr& e = k.body[i];
  const char* dtype = c10::toString(e.dtype);
  switch (e.op) {
    case ScalarOp::kVar: return fmt::format("v{}", e.var);
    case ScalarOp::kSym: return e.dtype == c10::ScalarType::Double ? fmt::format("double(s{})", e.var) : fmt::format("s{}", e.var);
    case ScalarOp::kConst:
      return e.dtype == c10::ScalarType::Float || e.dtype == c10::ScalarType::Double ? fmt::format("{}({})", dtype, e.value)
                                                                                     : fmt::format("{}({})", dtype, e.ivalue);
    case ScalarOp::kLoad: return fmt::format("load {}[{}]", k.buffers[e.buffer].name, operand(e.a));
    case ScalarOp::kStore: return fmt::format("store {}[{}] = {}", k.buffers[e.buffer].name, operand(e.a), operand(e.b));
    case ScalarOp::kReduce:
      return e.b >= 0 ? fmt::format("reduce_{}[loop {}]({}, {})", reduce_name(e.reduce), e.loop, operand(e.a), operand(e.b))
                      : fmt::format("reduce_{}[loop {}]({})", reduce_name(e.reduce), e.loop, operand(e.a));
    case ScalarOp::kCast: return fmt::format("cast<{}>({})", dtype, operand(e.a));
    default: break;
  }
  std::string args = operand(e.a);
  if (e.b >= 0) args += ", " + operand(e.b);
  if (e.c >= 0) args += ", " + operand(e.c);
  return fmt::format("{}<{}>({})", op_name(e.op), dtype, args);
}

}  // namespace

std::string to_text(const Kernel& k) {
  std::string s = fmt::format("kernel {}", k.name);
  if (k.tile) s += fmt::format(" tile={}", k.tile);
  s += "\n";
  for (size_t b = 0; b < k.buffers.size(); ++b)
    s += fmt::format("  buffer {} {} {}\n", k.buffers[b].name, c10::toString(k.buffers[b].dtype), k.buffers[b].written ? "out" : "in");
  for (size_t v = 0; v < k.vars.size(); ++v) {
    const LoopVar& var = k.vars[v];
    s += fmt::format("  v{} {} extent e{}", v, kind_name(var.kind), var.extent);
    if (var.kind == LoopVar::Kind::kReduction) s += fmt::format(" loop {}", var.loop);
    s += "\n";
  }
  for (size_t i = 0; i < k.body.size(); ++i)
    s += k.body[i].op == ScalarOp::kStore ? fmt::format("  {}\n", expr_text(k, i)) : fmt::format("  e{} = {}\n", i, expr_text(k, i));
  return s;
}

}  // namespace jitc::inductor
