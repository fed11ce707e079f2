// SymExpr: an integer that may depend on symbolic sizes: coeff * s_a [* s_b] + offset, or a constant.
// This small family is what two traces at different sizes can verify (see generalize.h): each form has
// one free parameter, fixed by the first trace and checked by the second.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace jitc::graph {

struct SymExpr {
  int64_t coeff = 0;
  int64_t offset = 0;
  int8_t factors[2] = {-1, -1};  // symbol ids; -1 = absent

  static SymExpr constant(int64_t value) {
    SymExpr e;
    e.offset = value;
    return e;
  }
  static SymExpr monomial(int64_t coeff, int a, int b = -1, int64_t offset = 0) {
    SymExpr e;
    e.coeff = coeff;
    e.offset = offset;
    e.factors[0] = static_cast<int8_t>(a);
    e.factors[1] = static_cast<int8_t>(b);
    return e;
  }
  bool is_constant() const { return factors[0] < 0; }
  bool is_one() const { return is_constant() && offset == 1; }  // a dim of size 1 (broadcasts)
  int64_t eval(const int64_t* symbols) const {
    if (is_constant()) return offset;
    int64_t m = coeff * symbols[factors[0]];
    if (factors[1] >= 0) m *= symbols[factors[1]];
    return m + offset;
  }
  bool operator==(const SymExpr& o) const {
    return coeff == o.coeff && offset == o.offset && factors[0] == o.factors[0] && factors[1] == o.factors[1];
  }
  bool operator!=(const SymExpr& o) const { return !(*this == o); }
  std::string to_string() const;  // "8", "s0", "64*s0", "s0*s1", "s0 - 1"
};

using SymShape = std::vector<SymExpr>;

SymShape constant_shape(const int64_t* values, size_t n);
// A shape's values where every entry is constant; nothing where one is symbolic.
std::optional<std::vector<int64_t>> constant_values(const SymShape& shape);
// The product of a shape's entries where every one is constant; nothing where one is symbolic.
std::optional<int64_t> constant_numel(const SymShape& shape);
std::string to_string(const SymShape& shape);  // "[s0, 64]"

}  // namespace jitc::graph
