#include "inductor/collapse_dims.h"

#include "inductor/index_analysis.h"

#include <c10/core/ScalarType.h>

#include <optional>
#include <vector>

namespace jitc::inductor {

namespace {

// True when every address reads the pair as one run of extent(outer) * extent(inner) elements
// (c_outer == c_inner * extent(inner)) and nothing else uses the pair other than affinely.
bool mergeable(const Kernel& k, int outer, int inner, int64_t inner_extent) {
  const std::vector<AffineForm> forms = affine_forms(k);
  for (size_t i = 0; i < k.body.size(); ++i) {
    if (forms[i].opaque[outer] || forms[i].opaque[inner]) return false;
    const Expr& e = k.body[i];
    if (e.op != ScalarOp::kLoad && e.op != ScalarOp::kStore) continue;
    const AffineForm& address = forms[e.a];
    if (address.coefficient[outer] != address.coefficient[inner] * inner_extent) return false;
  }
  return true;
}

int append_constant(Kernel& k, int64_t value) {
  Expr c;
  c.op = ScalarOp::kConst;
  c.dtype = c10::ScalarType::Long;
  c.ivalue = value;
  k.body.push_back(c);
  return static_cast<int>(k.body.size()) - 1;
}

// An inner dim of size 1 (the trailing 1s of a [512, 256, 1, 1] weight, of pooled [N, C, 1, 1]
// features) would make tiles of one element: a CUDA block, or a CPU element loop, per element. Its
// var is always 0, so the nearest outer dim of another size takes its place whatever the addresses.
void replace_unit_inner_dim(Kernel& k, int u) {
  if (integer_constant(k, k.vars[u].extent) != 1) return;
  const auto outer = k.outer_vars();
  for (size_t d = outer.size(); d-- > 0;) {
    const int o = outer[d];
    if (integer_constant(k, k.vars[o].extent) == 1) continue;
    for (Expr& e : k.body) {
      if (e.op != ScalarOp::kVar) continue;
      if (e.var == u) e = Expr{ScalarOp::kConst, c10::ScalarType::Long};
      else if (e.var == o) e.var = u;
    }
    k.vars[u].extent = k.vars[o].extent;
    k.vars[o].extent = append_constant(k, 1);
    return;
  }
}

}  // namespace

void collapse_inner_dims(Kernel& k) {
  const auto inner = k.inner_vars();
  if (k.tile <= 0 || inner.size() != 1) return;
  const int u = inner[0];
  replace_unit_inner_dim(k, u);
  const auto outer = k.outer_vars();
  for (size_t d = outer.size(); d-- > 0;) {
    const int o = outer[d];
    const auto inner_extent = integer_constant(k, k.vars[u].extent), outer_extent = integer_constant(k, k.vars[o].extent);
    if (!inner_extent || !outer_extent) return;
    if (*outer_extent == 1) continue;  // already merged, or a dim of size 1
    if (!mergeable(k, o, u, *inner_extent)) return;
    // outer reads as 0 and inner runs over both: c_o * o + c_i * i == c_i * (o * extent(i) + i).
    for (Expr& e : k.body)
      if (e.op == ScalarOp::kVar && e.var == o) e = Expr{ScalarOp::kConst, c10::ScalarType::Long};
    k.vars[u].extent = append_constant(k, *outer_extent * *inner_extent);
    k.vars[o].extent = append_constant(k, 1);
  }
}

}  // namespace jitc::inductor
