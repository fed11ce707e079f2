// The compile cache: ProgramCode by key, in memory (shared between compiled functions of this process)
// and on disk (shared with later processes, lib/cache/disk_cache.h). A warm process traces and checks
// guards, then loads object code: no lowering, no code generation, no LLVM optimization.
//
// key = sha256(key text), key text = jitc cache format, LibTorch version, code generator identity (LLVM
// version, CPU triple and features, vector library), codegen options, canonical text of the functional
// graph. A disk entry carries the whole key text and, before its code, the signature of its plan against
// the graph it was compiled from (kernel buffers, their dtypes, sizes and strides, extern ops): a loaded
// entry is used only if both match the graph it serves, else it is a miss with one warning.
#pragma once
#include "graph/graph.h"
#include "runtime/compile_times.h"
#include "runtime/cuda_autotune.h"
#include "runtime/program.h"

#include <functional>
#include <memory>
#include <string>

namespace jitc::runtime {

enum class CodeSource { kCompiled, kMemory, kDisk };

struct ObtainedCode {
  std::shared_ptr<const ProgramCode> code;
  CodeSource source = CodeSource::kCompiled;
  std::string key;
};

// tuned: compiled by mode=max-autotune (a different program for the same graph).
std::string program_key(const graph::Graph& functional, bool tuned = false);

// The code for `functional`: from memory, from disk, or scheduled by `schedule` and compiled (then kept
// in both). JITC_DEBUG_DIR (want_assembly) always compiles, to have the assembly. tuning: mode=max-autotune
// (CUDA kernels timed on the graph's shapes at these symbol values). times: each stage's time, if not null.
ObtainedCode obtain_code(const graph::Graph& functional, const std::string& name, bool want_assembly,
                         const std::function<inductor::Plan()>& schedule, const std::string& compile_id,
                         const TuningShapes* tuning = nullptr, CompileTimes* times = nullptr);

// Drops every cached program, in memory and on disk (jitc::clear_cache()).
void clear_program_caches();

}  // namespace jitc::runtime
