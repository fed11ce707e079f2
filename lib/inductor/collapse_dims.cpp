#include "inductor/collapse_dims.h"

#include <c10/core/ScalarType.h>

#include <optional>
#include <vector>

namespace jitc::inductor {

namespace {

// What an expression is with respect to the two vars being merged: free of them (or data loaded through
// them), an affine index c_outer * outer + c_inner * inner + (free part), or a use that merging would break.
struct Form {
  enum Kind { kFree, kAffine, kOther } kind = kFree;
  int64_t outer = 0, inner = 0;
};

std::optional<int64_t> constant_of(const Kernel& k, int e) {
  const Expr& x = k.body[e];
  if (x.op != ScalarOp::kConst || c10::isFloatingType(x.dtype)) return std::nullopt;
  return x.ivalue;
}

class Merge {
 public:
  Merge(const Kernel& k, int outer, int inner) : k_(k), outer_(outer), inner_(inner) {}

  // True when every address reads the pair as one run of extent(outer) * extent(inner) elements.
  bool possible() {
    const int64_t inner_extent = *constant_of(k_, k_.vars[inner_].extent);
    forms_.resize(k_.body.size());
    for (size_t i = 0; i < k_.body.size(); ++i) {
      forms_[i] = form_of(k_.body[i]);
      if (forms_[i].kind == Form::kOther) return false;
      const Expr& e = k_.body[i];
      if (e.op == ScalarOp::kLoad || e.op == ScalarOp::kStore) {
        const Form& address = forms_[e.a];
        if (address.kind == Form::kAffine && address.outer != address.inner * inner_extent) return false;
      }
    }
    return true;
  }

 private:
  Form form_of(const Expr& e) const {
    auto form = [&](int operand) { return forms_[operand]; };
    switch (e.op) {
      case ScalarOp::kVar:
        if (e.var == outer_) return {Form::kAffine, 1, 0};
        if (e.var == inner_) return {Form::kAffine, 0, 1};
        return {};
      case ScalarOp::kLoad: return {};  // data, whatever its address
      case ScalarOp::kStore:
        return form(e.b).kind == Form::kFree ? Form{} : Form{Form::kOther};  // a stored index would change
      case ScalarOp::kAdd:
      case ScalarOp::kSub: {
        const Form a = form(e.a), b = form(e.b);
        if (a.kind == Form::kOther || b.kind == Form::kOther) return {Form::kOther};
        if (a.kind == Form::kFree && b.kind == Form::kFree) return {};
        const int64_t sign = e.op == ScalarOp::kSub ? -1 : 1;
        return {Form::kAffine, a.outer + sign * b.outer, a.inner + sign * b.inner};
      }
      case ScalarOp::kMul: {
        const Form a = form(e.a), b = form(e.b);
        if (a.kind == Form::kFree && b.kind == Form::kFree) return {};
        if (a.kind == Form::kAffine && b.kind == Form::kFree)
          if (auto c = constant_of(k_, e.b)) return {Form::kAffine, a.outer * *c, a.inner * *c};
        if (b.kind == Form::kAffine && a.kind == Form::kFree)
          if (auto c = constant_of(k_, e.a)) return {Form::kAffine, b.outer * *c, b.inner * *c};
        return {Form::kOther};
      }
      default:
        for (int operand : {e.a, e.b, e.c})
          if (operand >= 0 && form(operand).kind != Form::kFree) return {Form::kOther};
        return {};
    }
  }

  const Kernel& k_;
  int outer_, inner_;
  std::vector<Form> forms_;
};

int append_constant(Kernel& k, int64_t value) {
  Expr c;
  c.op = ScalarOp::kConst;
  c.dtype = c10::ScalarType::Long;
  c.ivalue = value;
  k.body.push_back(c);
  return static_cast<int>(k.body.size()) - 1;
}

}  // namespace

void collapse_inner_dims(Kernel& k) {
  const auto inner = k.inner_vars();
  if (k.tile <= 0 || inner.size() != 1) return;
  const int u = inner[0];
  const auto outer = k.outer_vars();
  for (size_t d = outer.size(); d-- > 0;) {
    const int o = outer[d];
    const auto inner_extent = constant_of(k, k.vars[u].extent), outer_extent = constant_of(k, k.vars[o].extent);
    if (!inner_extent || !outer_extent) return;
    if (*outer_extent == 1) continue;  // already merged, or a dim of size 1
    if (!Merge(k, o, u).possible()) return;
    // outer reads as 0 and inner runs over both: c_o * o + c_i * i == c_i * (o * extent(i) + i).
    for (Expr& e : k.body)
      if (e.op == ScalarOp::kVar && e.var == o) e = Expr{ScalarOp::kConst, c10::ScalarType::Long};
    k.vars[u].extent = append_constant(k, *outer_extent * *inner_extent);
    k.vars[o].extent = append_constant(k, 1);
  }
}

}  // namespace jitc::inductor
