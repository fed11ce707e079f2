// Compiled-vs-eager checks for the code-generating backend. The first call of a compiled function
// traces (its result is eager's by construction); the second runs the compiled program, so tests
// compare the second call's result with eager.
#pragma once
#include "support/log_capture.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace jitc::testing {

// Tolerances per dtype (DESIGN.md section 9): float32 math to about 1e-6 relative (libm and ATen's
// vectorized functions differ in the last bits, and a fused chain does not round between ops), half and bfloat16
// computed in float32 then rounded once where eager rounds after every op, integers and bools exactly.
struct Tolerance {
  double rtol, atol;
};

inline Tolerance tolerance_for(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return {1e-6, 1e-6};
    case c10::ScalarType::Double: return {1e-12, 1e-12};
    case c10::ScalarType::Half:
    case c10::ScalarType::BFloat16: return {1e-2, 1e-2};
    default: return {0, 0};
  }
}

// Empty when they agree; otherwise what differs.
inline std::string difference(const at::Tensor& got, const at::Tensor& want, Tolerance tol) {
  if (!got.defined() || !want.defined()) return got.defined() == want.defined() ? "" : "one result is undefined";
  if (got.sizes() != want.sizes()) return fmt::format("sizes {} vs eager {}", c10::str(got.sizes()), c10::str(want.sizes()));
  if (got.scalar_type() != want.scalar_type())
    return fmt::format("dtype {} vs eager {}", c10::toString(got.scalar_type()), c10::toString(want.scalar_type()));
  if (got.strides() != want.strides() && got.numel() > 1)
    return fmt::format("strides {} vs eager {}", c10::str(got.strides()), c10::str(want.strides()));
  if (got.numel() == 0) return "";
  if (tol.rtol == 0 && tol.atol == 0) return at::equal(got, want) ? "" : "values differ (exact comparison)";
  const auto g = got.to(at::kDouble), w = want.to(at::kDouble);
  if (at::allclose(g, w, tol.rtol, tol.atol, /*equal_nan=*/true)) return "";
  const auto diff = (g - w).abs().nan_to_num(1e300);
  return fmt::format("max abs difference {} (rtol {}, atol {})", diff.max().item<double>(), tol.rtol, tol.atol);
}

// For a float32 chain that cancels (a - b with large terms and a small difference), eager's own result
// is off the exact one by ulps of the terms, not of the result, and so is a fused kernel's, in other
// bits: a fixed tolerance on the result fails by chance. This judges both against the float64 result
// (`exact`): empty when the compiled result is no more than twice as far from it as eager's worst
// element (or within float32's tolerance of it).
inline std::string difference_from_exact(const at::Tensor& got, const at::Tensor& eager, const at::Tensor& exact) {
  const std::string shape = difference(got, eager, {0, 1e300});
  if (!shape.empty()) return shape;
  const auto got_error = (got.to(at::kDouble) - exact).abs();
  const double eager_error = (eager.to(at::kDouble) - exact).abs().max().item<double>();
  const Tolerance tol = tolerance_for(got.scalar_type());
  const auto allowed = at::clamp_min(tol.atol + tol.rtol * exact.abs(), 2 * eager_error);
  if (at::le(got_error, allowed).all().item<bool>()) return "";
  return fmt::format("max error {} against float64 where eager's is {}", got_error.max().item<double>(), eager_error);
}

// A float32 sum rounds differently in every summation order (the kernel's is vectorized or split over
// threads, ATen's is its own), by about sqrt(n) ulps over n terms: the tolerance of a result whose
// elements each depend on a reduction of n elements grows with sqrt(n) (DESIGN.md section 9).
inline Tolerance reduction_tolerance(c10::ScalarType t, int64_t reduced) {
  const Tolerance base = tolerance_for(t);
  if (t != c10::ScalarType::Float || reduced <= 1) return base;
  const double scale = std::sqrt(static_cast<double>(reduced));
  return {base.rtol * scale, base.atol * scale};
}

// Runs `fn` eagerly and through jitc (trace, then compiled program); returns the difference. `reduced`:
// the elements reduced into each result element; 0 estimates it as the largest input's size over the
// result's (a reduction's ratio; 1 for pointwise ops and broadcasts), which a normalization's row
// statistics do not show: its checks give the row length.
template <class F, class... Args>
std::string compiled_vs_eager_reducing(int64_t reduced, F fn, const Args&... args) {
  const at::Tensor want = fn(args...);
  auto compiled = jitc::compile(fn);
  compiled(args...);
  const at::Tensor got = compiled(args...);
  if (compiled.stats().programs_compiled != 1) return "no compiled program ran (see the warnings above)";
  if (reduced == 0) {
    int64_t largest = 0;
    ((largest = std::max<int64_t>(largest, args.numel())), ...);
    reduced = std::max<int64_t>(1, largest / std::max<int64_t>(1, want.numel()));
  }
  return difference(got, want, reduction_tolerance(want.scalar_type(), reduced));
}

template <class F, class... Args>
std::string compiled_vs_eager(F fn, const Args&... args) {
  return compiled_vs_eager_reducing(0, fn, args...);
}

// Checks fn compiled against eager on these inputs; combinations eager itself rejects (bitwise ops on
// floats...) are skipped.
template <class F, class... T>
void check_parity_reducing(const std::string& name, int64_t reduced, F fn, const T&... inputs) {
  try {
    fn(inputs...);
  } catch (const std::exception&) {
    return;
  }
  std::function<at::Tensor(const T&...)> wrapped = fn;
  INFO(name);
  CHECK(compiled_vs_eager_reducing(
            reduced, [wrapped](const T&... x) { return wrapped(x...); }, inputs...) == "");
}

template <class F, class... T>
void check_parity(const std::string& name, F fn, const T&... inputs) {
  check_parity_reducing(name, 0, fn, inputs...);
}

// Ops that did not become kernel code: extern ATen calls (perf_hints' "extern:" line per program names
// them, views aside) and ops with no lowering at all (fusion names those, views included). check_parity
// alone would pass them, as eager compared with eager.
inline std::vector<std::string> unlowered_ops(const LogCapture& logs) {
  std::vector<std::string> found;
  for (const auto& line : logs.lines_with("[__perf_hints]"))
    if (line.find(": extern: ") != std::string::npos) found.push_back(line);
  for (const auto& line : logs.lines_with("runs as an extern ATen call"))
    if (line.find("(no lowering)") != std::string::npos) found.push_back(line);
  return found;
}

// check_parity, and every op of fn lowered into kernels.
template <class F, class... T>
void check_lowered_parity(const std::string& name, F fn, const T&... inputs) {
  LogCapture logs("perf_hints,fusion");
  check_parity(name, fn, inputs...);
  INFO(name);
  CHECK(unlowered_ops(logs) == std::vector<std::string>{});
}

}  // namespace jitc::testing
