// The CUDA code generator: kernel IR -> CUDA C source for NVRTC (see codegen_cuda.cpp for the mapping
// of rows, reductions and element loops onto thread blocks). lib/runtime compiles and launches it.
#pragma once
#include "inductor/kernel_ir.h"

#include <cstdint>
#include <string>

namespace jitc::inductor {

constexpr int kCudaBlockThreads = 256;

// extern "C" __global__ void <name>(Buffers_<name> buffers, Symbols symbols, long long tiles), where
// Buffers_<name> holds one pointer per kernel buffer and Symbols the values of up to 16 symbols.
// index32: every buffer has fewer than 2^31 elements, so indices fit 32-bit integers.
std::string emit_cuda(const Kernel& kernel, bool index32 = false);
// What a source of kernels starts with (once): helpers and the Symbols struct.
std::string cuda_prelude();

// The number of tiles (thread blocks' worth of work) of a kernel at these symbol values.
int64_t tile_count(const Kernel& kernel, const int64_t* symbols);
// An int64 size expression of the kernel (constants, symbols, + - *) at these symbol values.
int64_t evaluate_size(const Kernel& kernel, int expr, const int64_t* symbols);

}  // namespace jitc::inductor
