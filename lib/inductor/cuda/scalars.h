// How kernel IR scalars print as CUDA C (cuda/scalars.cpp).
#pragma once
#include "inductor/kernel_ir.h"

#include <string>
#include <vector>

namespace jitc::inductor::cuda {

bool is_float(c10::ScalarType t);             // float or double
bool is_unsigned(c10::ScalarType t);          // uint8 or bool
const char* c_type(c10::ScalarType t);        // the type a value computes in
const char* storage_type(c10::ScalarType t);  // the type a buffer holds (half/bf16 as raw bits)
const char* vector_type(size_t bytes);        // a type that moves `bytes` bytes in one access
std::string literal(double v, c10::ScalarType t);
int bits(c10::ScalarType t);                               // of an integer type
std::string identity(ReduceKind kind, c10::ScalarType t);  // a reduction's starting value
const char* combiner(ReduceKind kind);                     // how two partial results `a` and `b` combine
const char* math_name(ScalarOp op);                        // the CUDA math function of a unary op, or nullptr
// The C expression of a math, conversion, comparison or bitwise op of operands named a, b, c, computed
// in C type `ty` (throws std::invalid_argument for an op no CUDA kernel computes).
std::string value_of(const Expr& e, const std::string& ty, const std::string& a, const std::string& b, const std::string& c);

// Per expression: an integer computed from loop variables, sizes and constants only (an index, printed
// as idx_t, 32-bit when the buffers are small enough).
std::vector<bool> index_expressions(const Kernel& kernel);
// Per expression: a float32 value whose every use is a rounding to half or bfloat16 (directly, or through
// float arithmetic that is itself only rounded): approximate exp and division are accurate enough.
std::vector<bool> relaxed_math(const Kernel& kernel);

}  // namespace jitc::inductor::cuda
