// libm functions that loops call through jitc's own wrappers, so that every element of a value gets the
// same bits wherever it is computed. The loop vectorizer calls glibc's libmvec for the vector lanes
// (_ZGVdN4v_exp...), whose results differ from scalar libm's in the last bits; a loop's scalar tail, a
// loop that does not vectorize or another kernel computing the same value would call libm and round
// otherwise. `x == x.amax()` (amax's gradient tests exactly that) then finds no maximum. The printer
// calls `@jitc.vm.<libm name>`; jit.cpp defines each as the one libmvec variant the vectorizer maps it
// to, applied to its argument in every lane (plain libm where libmvec is missing).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace jitc::inductor::cpu {

// libm names (`exp`, `expf`, `pow`...) with vector variants; `binary` when they take two arguments.
bool has_vector_variant(std::string_view libm_name, bool* binary = nullptr);

// The function a kernel calls for libm function or LLVM intrinsic `fn` (`expf`, `llvm.exp.f32`):
// `jitc.vm.expf` where it has a vector variant, else `fn`.
std::string vector_math_callee(const std::string& fn);

// Every libm function with a vector variant, in both precisions (`exp`, `expf`...).
struct VectorMathFunction {
  std::string name;
  bool is_float;  // takes and returns float (else double)
  bool binary;    // two arguments
};
std::vector<VectorMathFunction> vector_math_functions();

constexpr std::string_view kVectorMathPrefix = "jitc.vm.";

}  // namespace jitc::inductor::cpu
