// Kernels as functions of their sizes. A CNN's batch norms reduce over (N, H, W) per channel: rows side
// by side in channels-last (codegen_columns.cpp), rows otherwise; their normalizations and an optimizer's
// per-parameter updates are pointwise. The kernels of its layers differ in their constants only (sizes,
// strides, element counts), and LLVM compiles each. Printed with those constants read from the symbol
// array instead, the layers' kernels print the same IR, which LLVM compiles once (render's
// deduplication), and each launch passes its own values. The schedule stays each kernel's own, decided on
// its constants: two kernels of equal IR made equal decisions, and each kernel's decisions hold for its
// own sizes.
#pragma once
#include "inductor/cpu/schedule.h"
#include "inductor/kernel_ir.h"

#include <cstdint>
#include <vector>

namespace jitc::inductor::cpu {

// Integer and float constants other than 0 and +-1 (which shape the code alike in every layer and which
// LLVM folds) become parameters, one per use: a layer whose height equals its channel count shares its
// kernel builder's constant between them, another layer does not, and both print alike. A pointwise
// kernel keeps the constants that shape its vector code (its inner loop's extent and strides, divisors):
// parameterized wholesale, CPU inference ran up to 14% slower (RESULTS.md, session 31).
struct ParameterizedKernel {
  Kernel kernel;                // the kernel with its constants read as symbols first_symbol, first_symbol + 1, ...
  int first_symbol = 0;         // past the graph symbols the kernel reads
  std::vector<int64_t> values;  // per parameter: the integer, or a floating constant's double bits
  std::vector<int> moved;       // per expression of the original kernel: its index in `kernel` (-1: a parameter)
};

ParameterizedKernel parameterize(const Kernel& kernel);

// Whether a kernel may print as a function of its sizes: its schedule holds no strategy that sizes arrays
// or loops from constant extents (the row cache, pipelined rows, prefetch, staged stores): the printer
// then reads sizes from the kernel's expressions only.
bool prints_parameterized(const llvm_ir::CpuSchedule& schedule);

// The original kernel's schedule for the parameterized one.
llvm_ir::CpuSchedule parameterized_schedule(const llvm_ir::CpuSchedule& schedule, const ParameterizedKernel& parameterized);

}  // namespace jitc::inductor::cpu
