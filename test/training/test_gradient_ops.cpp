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
  // prod's backward reads data on the host, and its data-free form differs from eager's at NaNs (see the
  // next test): it runs eagerly in grad mode. max and min over all elements compile (a second trace).
  int checked = 0;
  for (const auto& [name, op] : reduction_ops()) {
    const Fn f = [op = op](const Tensors& x) { return op(x[0]); };
    for (auto dtype : {at::kDouble, at::kFloat}) {
      const Tensors values{sample_of(dtype, {2, 4, 6}, 4)};
      if (!differentiable(f, values)) continue;
      INFO(name << " " << c10::toString(dtype));
      check_gradients(f, values, {}, dtype == at::kDouble ? 1e-10 : 2e-5, 3, name != "prod");
      checked += 1;
    }
  }
  CHECK(checked > 5);
}

// ATen's CPU backward formulas of max, min and median over all elements read data on the host for an
// ordinary tensor (is the maximum NaN), which a training trace could only follow as a graph break in its
// backward: such functions ran eagerly in grad mode. They are traced again with subclass-like stand-ins
// (as FakeTensors are), whose formulas read nothing (the ones eager runs on CUDA): one compiled backward
// must give eager's gradients whatever the data, so each function is called on inputs with and without
// zeros, with ties and with NaNs (the same shapes: hits of one entry). prod's and cumprod's data-free
// formulas differ from eager's at NaN and infinite elements: those still run eagerly, with eager's values.
TEST_CASE("reductions whose eager backward reads data train compiled, with eager's gradients at zeros, ties and NaNs", "[training]") {
  struct Case {
    std::string name;
    Fn f;
    bool compiles;
  };
  const std::vector<Case> cases = {
      {"max_all", [](const Tensors& x) { return x[0].max() * x[0]; }, true},
      {"min_all", [](const Tensors& x) { return x[0].min() + x[0]; }, true},
      {"median_all", [](const Tensors& x) { return x[0].median() * x[0]; }, true},
      {"prod_all", [](const Tensors& x) { return x[0].prod(); }, false},
      {"prod_dim", [](const Tensors& x) { return x[0].prod(1); }, false},
      {"cumprod", [](const Tensors& x) { return x[0].cumprod(1); }, false},
  };
  auto inputs = [] {
    const at::Tensor base = at::linspace(0.5, 2.0, 12, at::kDouble).reshape({3, 4});
    at::Tensor one_zero = base.clone(), two_zeros = base.clone(), ties = base.clone(), nans = base.clone();
    one_zero.index_put_({1, 2}, 0.0);
    two_zeros.index_put_({1, 2}, 0.0);
    two_zeros.index_put_({1, 3}, 0.0);
    ties.index_put_({0, 0}, 2.0);
    ties.index_put_({2, 1}, 0.5);
    nans.index_put_({2, 2}, std::nan(""));
    return std::vector<at::Tensor>{base, one_zero, two_zeros, ties, nans};
  };
  for (const auto& [name, f, compiles] : cases) {
    INFO(name);
    auto compiled = jitc::compile([f = f](const Tensors& xs) { return f(xs); });
    for (const at::Tensor& x : inputs()) {
      INFO("input " << x);
      const at::Tensor tangent = at::linspace(-1.0, 1.0, f({x}).numel(), at::kDouble).reshape(f({x}).sizes());
      const auto want = run(f, {x}, {true}, tangent);
      const auto got = run([&](const Tensors& xs) { return compiled(xs); }, {x}, {true}, tangent);
      CHECK(close(got.first, want.first, 1e-12));
      CHECK(close(got.second[0], want.second[0], 1e-12));
    }
    CHECK(compiled.stats().compiles == (compiles ? 1 : 0));
    CHECK(compiled.stats().eager_fallbacks == (compiles ? 0 : 5));
  }
}
