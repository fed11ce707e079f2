// How kernel IR scalars print as CUDA C (cuda_scalars.cpp).
#pragma once
#include "inductor/kernel_ir.h"

#include <string>

namespace jitc::inductor::cuda {

bool is_float(c10::ScalarType t);     // float or double
bool is_unsigned(c10::ScalarType t);  // uint8 or bool
const char* c_type(c10::ScalarType t);        // the type a value computes in
const char* storage_type(c10::ScalarType t);  // the type a buffer holds (half/bf16 as raw bits)
std::string literal(double v, c10::ScalarType t);
int bits(c10::ScalarType t);  // of an integer type
std::string identity(ReduceKind kind, c10::ScalarType t);  // a reduction's starting value
const char* combiner(ReduceKind kind);  // how two partial results `a` and `b` combine
const char* math_name(ScalarOp op);     // the CUDA math function of a unary op, or nullptr

}  // namespace jitc::inductor::cuda
