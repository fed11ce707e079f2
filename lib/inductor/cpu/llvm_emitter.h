// llvm_ir::Emitter: writes LLVM IR text for the CPU code generator (cpu/codegen.cpp): lines, labels,
// fresh names and declarations, and the scalar operations that take more than one instruction: NaN-aware
// max/min, Python's division and remainder, integer pow, conversions and bfloat16 rounding, exp and erf
// in plain arithmetic (so that loops calling them vectorize).
#pragma once
#include <c10/core/ScalarType.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace jitc::inductor::llvm_ir {

using c10::ScalarType;

bool is_float(ScalarType t);
bool is_unsigned(ScalarType t);
const char* compute_type(ScalarType t);  // the LLVM type a value of this dtype computes in
const char* storage_type(ScalarType t);  // ... and is stored as (half, i16 for bfloat16, i8 for bool)
int bits(ScalarType t);
std::string float_literal(double v, ScalarType t);
const char* libm_suffix(ScalarType t);

class Emitter {
 public:
  void line(const std::string& s) { out_ += "  " + s + "\n"; }
  void label(const std::string& s) { out_ += s + ":\n"; }
  std::string fresh(const std::string& stem);
  std::string declare(const std::string& decl);  // once per module
  void metadata(const std::string& definition);  // "!N = ...", once per module
  // A call of a one-argument function without side effects (libm, or an intrinsic).
  std::string call(const std::string& fn, ScalarType t, const std::string& arg);
  std::string call(const std::string& fn, ScalarType t, const std::string& a, const std::string& b);
  std::string intrinsic(const char* stem, ScalarType t, const std::string& arg);

  std::string to_bfloat16(const std::string& value);
  void cast(const std::string& v, const std::string& a, ScalarType from, ScalarType to);
  void libm(const std::string& v, const char* stem, ScalarType t, const std::string& a);
  void compare(const std::string& v, ScalarType t, const std::string& a, const std::string& b, const char* fcmp, const char* scmp,
               const char* ucmp);
  void extremum(const std::string& v, ScalarType t, const std::string& a, const std::string& b, bool max);
  void sign(const std::string& v, ScalarType t, const std::string& a);
  // exp and erf of a float in plain arithmetic (vectorizable), within 2 ulp of expf / 1.5e-7 of erff.
  void exp_float(const std::string& v, const std::string& a);
  void erf_float(const std::string& v, const std::string& a);
  // sin and cos of a float by one shared reduction (names stem.sin, stem.cos), right for |x| < 65536;
  // stem.ok is false beyond and for NaN and infinities, whose results here are those of 0.
  struct SinCos {
    std::string sin, cos, ok;
  };
  SinCos sincos_float(const std::string& stem, const std::string& a);
  // Integer division by zero would trap the process: a zero divisor divides by one instead.
  std::string safe_divisor(ScalarType t, const std::string& a, const std::string& b);
  void floor_div(const std::string& v, ScalarType t, const std::string& a, const std::string& b);  // Python's //
  void remainder(const std::string& v, ScalarType t, const std::string& a, const std::string& b);  // Python's %
  void int_pow(const std::string& v, ScalarType t, const std::string& a, const std::string& b);

 protected:
  std::unordered_map<std::string, bool> declared_;
  std::string declarations_, out_;
  int counter_ = 0;
};

}  // namespace jitc::inductor::llvm_ir
