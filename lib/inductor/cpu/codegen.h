// The CPU code generator: kernel IR -> LLVM IR text (see codegen_cpu.cpp for the kernel ABI). Only
// lib/inductor/cpu/jit.cpp parses and compiles it; this folder never includes LLVM headers.
#pragma once
#include "inductor/kernel_ir.h"

#include <string>

namespace jitc::inductor {

// Functions: `void <name>(ptr buffers, ptr symbols, i64 tile_begin, i64 tile_end)` and
// `i64 <name>.tiles(ptr symbols)`. Throws std::invalid_argument for a kernel it cannot print.
std::string emit_llvm_ir(const Kernel& kernel);

}  // namespace jitc::inductor
