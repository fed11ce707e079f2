#include "inductor/index_analysis.h"

#include <c10/core/ScalarType.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>

namespace jitc::inductor {

IndexAnalysis::IndexAnalysis(const Kernel& kernel) : k_(kernel) {
  deps_.assign(k_.body.size(), std::vector<bool>(k_.vars.size(), false));
  for (size_t i = 0; i < k_.body.size(); ++i) {
    const Expr& e = k_.body[i];
    if (e.op == ScalarOp::kVar) deps_[i][e.var] = true;
    // A reduction's value is one per row: it depends on no variable of its own loop.
    if (e.op == ScalarOp::kReduce) continue;
    for (int operand : {e.a, e.b, e.c})
      if (operand >= 0)
        for (size_t v = 0; v < k_.vars.size(); ++v) deps_[i][v] = deps_[i][v] || deps_[operand][v];
  }
  number_positionally();
}

bool IndexAnalysis::depends_on(int expr, int var) const { return deps_[expr][var]; }

bool IndexAnalysis::unit_stride(int index, int var) const {
  const Expr& e = k_.body[index];
  if (e.op == ScalarOp::kVar) return e.var == var;
  if (e.op != ScalarOp::kAdd) return false;
  return (unit_stride(e.a, var) && !depends_on(e.b, var)) || (unit_stride(e.b, var) && !depends_on(e.a, var));
}

bool IndexAnalysis::multiple_of(int index, int var, int64_t factor) const { return power_of_two_factor(index, var, factor) % factor == 0; }

// The largest power of two (up to 2^20) that divides expression `expr` for every value of the variables
// and symbols, `var` taking only multiples of var_factor. Products and sums of such powers wrap around
// 2^64 (or 2^32) exactly, so the answer holds in the kernel's index type too.
int64_t IndexAnalysis::power_of_two_factor(int expr, int var, int64_t var_factor) const {
  constexpr int64_t kCap = int64_t{1} << 20;
  const Expr& e = k_.body[expr];
  const auto of = [&](int operand) { return power_of_two_factor(operand, var, var_factor); };
  switch (e.op) {
    case ScalarOp::kConst: {
      if (c10::isFloatingType(e.dtype) || e.dtype == c10::ScalarType::Bool) return 1;
      const uint64_t v = static_cast<uint64_t>(e.ivalue);
      return v == 0 ? kCap : static_cast<int64_t>(std::min<uint64_t>(kCap, v & (~v + 1)));
    }
    case ScalarOp::kVar: return e.var == var ? var_factor : 1;
    case ScalarOp::kAdd:
    case ScalarOp::kSub: return std::min(of(e.a), of(e.b));
    case ScalarOp::kMul: return std::min(kCap, of(e.a) * of(e.b));
    default: return 1;  // symbols, divisions, remainders...: nothing known
  }
}

namespace {

bool commutative(ScalarOp op) {
  switch (op) {
    case ScalarOp::kAdd:
    case ScalarOp::kMul:
    case ScalarOp::kMax:
    case ScalarOp::kMin:
    case ScalarOp::kAnd:
    case ScalarOp::kOr:
    case ScalarOp::kXor:
    case ScalarOp::kEq:
    case ScalarOp::kNe: return true;
    default: return false;
  }
}

}  // namespace

void IndexAnalysis::number_positionally() {
  // A variable's position: its place among its loop's variables (reduction and inner variables), or
  // its own id plus an offset for outer variables (rows differ).
  std::vector<int> position(k_.vars.size());
  for (int loop = 0; loop < k_.num_reduction_loops; ++loop) {
    const auto vars = k_.loop_vars(loop);
    for (size_t d = 0; d < vars.size(); ++d) position[vars[d]] = static_cast<int>(d);
  }
  const auto inner = k_.inner_vars();
  for (size_t d = 0; d < inner.size(); ++d) position[inner[d]] = static_cast<int>(d);
  for (int v : k_.outer_vars()) position[v] = 1000 + v;

  using Shape = std::tuple<int, int, int, int, int, int, int, int, int64_t, int64_t>;
  std::map<Shape, int> numbers;
  keys_.assign(k_.body.size(), -1);
  for (size_t i = 0; i < k_.body.size(); ++i) {
    const Expr& e = k_.body[i];
    auto key_of = [&](int operand) { return operand >= 0 ? keys_[operand] : -1; };
    int a = key_of(e.a), b = key_of(e.b);
    if (commutative(e.op) && a > b) std::swap(a, b);
    const int var = e.op == ScalarOp::kVar ? position[e.var] : e.var;
    // A reduction's loop is part of what it computes; everything else in a loop is positional.
    const int loop = e.op == ScalarOp::kReduce ? static_cast<int>(i) : -1;
    const Shape shape{int(e.op), int(e.dtype), a, b, key_of(e.c), var, e.buffer, loop, e.ivalue, std::bit_cast<int64_t>(e.value)};
    keys_[i] = numbers.emplace(shape, static_cast<int>(numbers.size())).first->second;
  }
}

namespace {

std::vector<int> extents(const Kernel& k, const std::vector<int>& vars) {
  std::vector<int> out;
  for (int v : vars) out.push_back(k.vars[v].extent);
  return out;
}

}  // namespace

int64_t constant_row_elements(const Kernel& k) {
  if (k.tile > 0 || k.num_reduction_loops == 0) return 0;
  const auto shape = extents(k, k.loop_vars(0));
  for (int loop = 1; loop < k.num_reduction_loops; ++loop)
    if (extents(k, k.loop_vars(loop)) != shape) return 0;
  const auto inner = k.inner_vars();
  if (!inner.empty() && extents(k, inner) != shape) return 0;
  int64_t elements = 1;
  for (int e : shape) {
    if (k.body[e].op != ScalarOp::kConst) return 0;
    elements *= k.body[e].ivalue;
  }
  return elements;
}

size_t side_by_side_row_bytes(const Kernel& k) {
  const auto outer = k.outer_vars();
  if (k.tile > 0 || k.num_reduction_loops == 0 || outer.empty()) return 0;
  // The variables that step fastest inside a row: the innermost of each reduction loop and of the
  // element loop. If any access is contiguous along one of them, one block per row reads well already.
  std::vector<int> in_row;
  for (int loop = 0; loop < k.num_reduction_loops; ++loop)
    if (auto vars = k.loop_vars(loop); !vars.empty()) in_row.push_back(vars.back());
  if (auto inner = k.inner_vars(); !inner.empty()) in_row.push_back(inner.back());
  const IndexAnalysis analysis(k);
  size_t narrowest = 0;  // bytes of the narrowest element read or written contiguously across rows
  for (const Expr& e : k.body) {
    if (e.op != ScalarOp::kLoad && e.op != ScalarOp::kStore) continue;
    bool in_loop = false;
    for (int v : in_row) {
      if (analysis.unit_stride(e.a, v)) return 0;
      in_loop = in_loop || analysis.depends_on(e.a, v);
    }
    if (in_loop && analysis.unit_stride(e.a, outer.back())) {
      const size_t bytes = c10::elementSize(k.buffers[e.buffer].dtype);
      narrowest = narrowest == 0 ? bytes : std::min(narrowest, bytes);
    }
  }
  return narrowest;
}

namespace {

// Marks every var that `from` uses (affinely or not) as opaque in `to`.
void make_opaque(AffineForm& to, const AffineForm& from) {
  for (size_t v = 0; v < to.opaque.size(); ++v) to.opaque[v] = to.opaque[v] || from.opaque[v] || from.coefficient[v] != 0;
}

bool free_of_vars(const AffineForm& f) {
  return f.affine() && std::all_of(f.coefficient.begin(), f.coefficient.end(), [](int64_t c) { return c == 0; });
}

AffineForm form_of(const Kernel& k, const Expr& e, const std::vector<AffineForm>& forms) {
  const size_t n = k.vars.size();
  AffineForm f{std::vector<int64_t>(n, 0), std::vector<bool>(n, false)};
  auto operands = [&](std::initializer_list<int> ids) {
    for (int id : ids)
      if (id >= 0) f.loaded = f.loaded || forms[id].loaded;
  };
  switch (e.op) {
    case ScalarOp::kVar: f.coefficient[e.var] = 1; return f;
    case ScalarOp::kLoad: f.loaded = true; return f;  // data, whatever its address
    case ScalarOp::kStore:
      make_opaque(f, forms[e.b]);
      operands({e.b});
      return f;
    case ScalarOp::kAdd:
    case ScalarOp::kSub: {
      const AffineForm &a = forms[e.a], &b = forms[e.b];
      const int64_t sign = e.op == ScalarOp::kSub ? -1 : 1;
      for (size_t v = 0; v < n; ++v) {
        f.coefficient[v] = a.coefficient[v] + sign * b.coefficient[v];
        f.opaque[v] = a.opaque[v] || b.opaque[v];
      }
      operands({e.a, e.b});
      return f;
    }
    case ScalarOp::kMul: {
      const AffineForm &a = forms[e.a], &b = forms[e.b];
      operands({e.a, e.b});
      // An affine form times an integer constant stays affine; any other product of var terms is opaque.
      const auto scale = free_of_vars(b) ? integer_constant(k, e.b) : free_of_vars(a) ? integer_constant(k, e.a) : std::nullopt;
      if (scale) {
        const AffineForm& affine = free_of_vars(b) ? a : b;
        for (size_t v = 0; v < n; ++v) {
          f.coefficient[v] = affine.coefficient[v] * *scale;
          f.opaque[v] = affine.opaque[v];
        }
        return f;
      }
      make_opaque(f, a);
      make_opaque(f, b);
      return f;
    }
    default:
      for (int id : {e.a, e.b, e.c})
        if (id >= 0) make_opaque(f, forms[id]);
      operands({e.a, e.b, e.c});
      return f;
  }
}

}  // namespace

std::optional<int64_t> integer_constant(const Kernel& k, int expr) {
  const Expr& e = k.body[expr];
  if (e.op != ScalarOp::kConst || c10::isFloatingType(e.dtype)) return std::nullopt;
  return e.ivalue;
}

bool AffineForm::affine() const {
  return std::none_of(opaque.begin(), opaque.end(), [](bool o) { return o; });
}

std::vector<AffineForm> affine_forms(const Kernel& k) {
  std::vector<AffineForm> forms;
  forms.reserve(k.body.size());
  for (const Expr& e : k.body) forms.push_back(form_of(k, e, forms));
  return forms;
}

}  // namespace jitc::inductor
