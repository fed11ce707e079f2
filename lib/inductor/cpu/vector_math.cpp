#include "inductor/cpu/vector_math.h"

#include <algorithm>
#include <array>

namespace jitc::inductor::cpu {

namespace {

// glibc 2.35+'s libmvec, double names (float ones end in `f`).
constexpr std::array<std::string_view, 23> kUnary = {"sin",  "cos",   "tan",   "asin",  "acos", "atan", "sinh",  "cosh",
                                                     "tanh", "asinh", "acosh", "atanh", "exp",  "exp2", "exp10", "expm1",
                                                     "log",  "log2",  "log10", "log1p", "erf",  "erfc", "cbrt"};
constexpr std::array<std::string_view, 3> kBinary = {"pow", "atan2", "hypot"};

template <size_t N>
bool listed(const std::array<std::string_view, N>& names, std::string_view name) {
  if (std::find(names.begin(), names.end(), name) != names.end()) return true;
  return name.size() > 1 && name.back() == 'f' && std::find(names.begin(), names.end(), name.substr(0, name.size() - 1)) != names.end();
}

// `llvm.exp.f32` -> `expf`; a libm name as it is.
std::string libm_name(const std::string& fn) {
  if (fn.rfind("llvm.", 0) != 0) return fn;
  const size_t dot = fn.rfind('.');
  const std::string stem = fn.substr(5, dot - 5);
  return fn.substr(dot + 1) == "f32" ? stem + "f" : stem;
}

}  // namespace

bool has_vector_variant(std::string_view name, bool* binary) {
  const bool two = listed(kBinary, name);
  if (binary) *binary = two;
  return two || listed(kUnary, name);
}

std::string vector_math_callee(const std::string& fn) {
  const std::string name = libm_name(fn);
  return has_vector_variant(name) ? std::string(kVectorMathPrefix) + name : fn;
}

std::vector<VectorMathFunction> vector_math_functions() {
  std::vector<VectorMathFunction> functions;
  for (const bool binary : {false, true})
    for (std::string_view n : binary ? std::vector<std::string_view>(kBinary.begin(), kBinary.end())
                                     : std::vector<std::string_view>(kUnary.begin(), kUnary.end())) {
      functions.push_back({std::string(n), false, binary});
      functions.push_back({std::string(n) + "f", true, binary});
    }
  return functions;
}

}  // namespace jitc::inductor::cpu
