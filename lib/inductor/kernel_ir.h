// Kernel IR (first slice: pointwise float32 kernels). A kernel computes one output over an N-d
// iteration space; each load reads an input through its own strides (0 = broadcast), so views and
// broadcasts are index arithmetic, never copies. The body is SSA: an expression's operands are
// earlier expressions. Device-neutral: the CPU code generator prints LLVM IR from it; CUDA C follows.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace jitc::inductor {

struct Access {
  int buffer = 0;                // 0 = the output; 1.. = inputs in the kernel's argument order
  std::vector<int64_t> strides;  // elements, one per iteration dim
  int64_t offset = 0;            // elements
};

enum class ScalarOp { kLoad, kConstant, kAdd, kSub, kMul, kDiv, kMaximum, kMinimum, kNeg, kExp, kRelu, kSigmoid };

struct Expr {
  ScalarOp op = ScalarOp::kConstant;
  int a = -1, b = -1;  // operand expressions
  int load = -1;       // kLoad: index into PointwiseKernel::loads
  double value = 0;    // kConstant
};

struct PointwiseKernel {
  std::string name;
  std::vector<int64_t> sizes;  // the iteration space = the output's sizes
  std::vector<Access> loads;
  std::vector<Expr> body;
  int result = -1;             // the expression stored; -1 = the last one
  Access store;
  int num_inputs = 0;
};

// LLVM IR text of `void <name>(ptr buffers)`, buffers[0] = output, buffers[i] = input i. The innermost
// dim is the inner loop, so unit-stride accesses vectorize.
std::string emit_llvm_ir(const PointwiseKernel& kernel);  // codegen_cpu.cpp

}  // namespace jitc::inductor
