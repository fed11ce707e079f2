// Gradient parity for every op in the parity tests' op lists (test/inductor/op_lists.h): unary, binary
// (broadcasting) and reductions, compiled vs eager in float64 (tight) and float32 (to rounding), and a
// finite-difference check of the compiled gradients on a sample of elements in float64.
#include "inductor/op_lists.h"
#include "training/training_support.h"

#include <algorithm>

using namespace jitc::testing;

namespace {

// Whether eager differentiates f at these inputs: comparisons and integer results have nothing to
// compare; ops without a kernel for the dtype or without a derivative raise in eager (a compiled call
// raises the same, tested elsewhere).
bool differentiable(const Fn& f, const Tensors& values) {
  try {
    Tensors leaves = fresh_leaves(values, std::vector<bool>(values.size(), true));
    const at::Tensor out = f(leaves);
    if (!out.requires_grad() || !at::isFloatingType(out.scalar_type())) return false;
    out.sum().backward();
    return true;
  } catch (const c10::Error&) {
    return false;
  }
}

// Central differences of sum(f(x) * tangent) at a few elements of input 0, against the compiled gradient.
void check_finite_differences(const Fn& f, const Tensors& values, const std::string& name) {
  auto compiled = jitc::compile([f](const Tensors& xs) { return f(xs); });
  const at::Tensor tangent = at::randn_like(f(values));
  Tensors leaves;
  for (int call = 0; call < 2; ++call) {  // the second call runs the compiled backward
    leaves = fresh_leaves(values, std::vector<bool>(values.size(), true));
    (compiled(leaves) * tangent).sum().backward();
  }
  const at::Tensor flat = values[0].reshape({-1});
  for (int64_t i : {int64_t{0}, flat.numel() / 2, flat.numel() - 1}) {
    auto at_offset = [&](double h) {
      Tensors shifted = values;
      shifted[0] = values[0].clone();
      shifted[0].view({-1})[i] += h;
      return (f(shifted) * tangent).sum().item<double>();
    };
    const double h = 1e-6, numeric = (at_offset(h) - at_offset(-h)) / (2 * h);
    const double analytic = leaves[0].grad().reshape({-1})[i].item<double>();
    INFO(name << " element " << i << ": numeric " << numeric << ", compiled " << analytic);
    CHECK(std::abs(numeric - analytic) <= 1e-5 * (1 + std::abs(numeric)));
  }
}

at::Tensor sample_of(c10::ScalarType dtype, at::IntArrayRef sizes, int seed) { return sample(sizes, dtype, seed); }

}  // namespace

TEST_CASE("gradients of unary ops equal eager's (float64, float32) and finite differences", "[training]") {
  int checked = 0;
  for (const auto& [name, op] : unary_ops()) {
    const Fn f = [op = op](const Tensors& x) { return op(x[0]); };
    for (auto dtype : {at::kDouble, at::kFloat}) {
      const Tensors values{sample_of(dtype, {3, 5}, 1)};
      if (!differentiable(f, values)) continue;
      INFO(name << " " << c10::toString(dtype));
      check_gradients(f, values, {}, dtype == at::kDouble ? 1e-10 : 2e-5);
      // A result rounded to another dtype (cast_to_float) has no float64 finite differences to compare.
      if (dtype == at::kDouble && f(values).scalar_type() == at::kDouble) check_finite_differences(f, values, name);
      checked += 1;
    }
  }
  CHECK(checked > 40);
}

TEST_CASE("gradients of binary ops with broadcasting equal eager's (float64, float32)", "[training]") {
  int checked = 0;
  for (const auto& [name, op] : binary_ops()) {
    const Fn f = [op = op](const Tensors& x) { return op(x[0], x[1]); };
    for (auto dtype : {at::kDouble, at::kFloat}) {
      const Tensors values{sample_of(dtype, {3, 5}, 2), sample_of(dtype, {5}, 3)};
      if (!differentiable(f, values)) continue;
      INFO(name << " " << c10::toString(dtype));
      check_gradients(f, values, {}, dtype == at::kDouble ? 1e-10 : 2e-5);
      checked += 1;
    }
  }
  CHECK(checked > 10);
}

TEST_CASE("gradients of reductions equal eager's (float64, float32)", "[training]") {
  // Their CPU backward formulas read data (max over all elements asks whether the maximum is NaN; prod
  // whether an element is 0): such calls run eagerly in grad mode.
  const std::vector<std::string> reads_data = {"max_all", "min_all", "prod"};
  int checked = 0;
  for (const auto& [name, op] : reduction_ops()) {
    const Fn f = [op = op](const Tensors& x) { return op(x[0]); };
    for (auto dtype : {at::kDouble, at::kFloat}) {
      const Tensors values{sample_of(dtype, {2, 4, 6}, 4)};
      if (!differentiable(f, values)) continue;
      INFO(name << " " << c10::toString(dtype));
      const bool compiled = std::find(reads_data.begin(), reads_data.end(), name) == reads_data.end();
      check_gradients(f, values, {}, dtype == at::kDouble ? 1e-10 : 2e-5, 3, compiled);
      checked += 1;
    }
  }
  CHECK(checked > 5);
}
