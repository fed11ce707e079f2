// The CPU code generator: kernel IR -> LLVM IR text (see codegen.cpp for the kernel ABI). Only jit.cpp
// parses and compiles it; no other file includes LLVM headers.
#pragma once
#include "inductor/backend.h"
#include "inductor/kernel_ir.h"

#include <string>

namespace jitc::inductor {

// Functions: `void <name>(ptr buffers, ptr symbols, i64 tile_begin, i64 tile_end)` and
// `i64 <name>.tiles(ptr symbols)`. Throws std::invalid_argument for a kernel it cannot print.
// `schedule`, when given, receives what the scheduling step (cpu/schedule.h) decided: elements per tile, rows side by side, row
// cache arrays, pipelined reductions, prefetched loads, streamed stores, fast sin/cos.
std::string emit_llvm_ir(const Kernel& kernel, Schedule* schedule = nullptr);

namespace llvm_ir {
struct CpuSchedule;
}
// The kernel printed as `schedule` says (schedule_cpu_kernel's decisions, or a variant of them: a
// strategy dropped from a schedule prints a kernel without it).
std::string emit_llvm_ir(const Kernel& kernel, const llvm_ir::CpuSchedule& schedule);

}  // namespace jitc::inductor
