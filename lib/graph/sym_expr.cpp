#include "graph/sym_expr.h"

#include <fmt/format.h>

namespace jitc::graph {

std::string SymExpr::to_string() const {
  if (is_constant()) return std::to_string(offset);
  std::string s = coeff == 1 ? "" : coeff == -1 ? "-" : fmt::format("{}*", coeff);
  s += fmt::format("s{}", factors[0]);
  if (factors[1] >= 0) s += fmt::format("*s{}", factors[1]);
  if (offset > 0) s += fmt::format(" + {}", offset);
  if (offset < 0) s += fmt::format(" - {}", -offset);
  return s;
}

SymShape constant_shape(const int64_t* values, size_t n) {
  SymShape shape;
  shape.reserve(n);
  for (size_t i = 0; i < n; ++i) shape.push_back(SymExpr::constant(values[i]));
  return shape;
}

std::optional<std::vector<int64_t>> constant_values(const SymShape& shape) {
  std::vector<int64_t> values;
  values.reserve(shape.size());
  for (const auto& e : shape) {
    if (!e.is_constant()) return std::nullopt;
    values.push_back(e.offset);
  }
  return values;
}

std::optional<int64_t> constant_numel(const SymShape& shape) {
  int64_t count = 1;
  for (const auto& e : shape) {
    if (!e.is_constant()) return std::nullopt;
    count *= e.offset;
  }
  return count;
}

std::string to_string(const SymShape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + shape[i].to_string();
  return s + "]";
}

}  // namespace jitc::graph
