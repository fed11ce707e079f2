// The compile cache: ProgramCode by key, in memory (shared between compiled functions of this process)
// and on disk (shared with later processes, lib/cache/disk_cache.h). A warm process traces and checks
// guards, then loads object code: no lowering, no code generation, no LLVM optimization.
//
// key = sha256(key text), key text = jitc cache format, LibTorch version, the identity of each backend
// the graph's devices have (LLVM version, CPU triple and features, vector library; CUDA architecture,
// NVRTC version), this build of jitc, codegen options, canonical text of the functional graph. A disk
// entry carries the whole key text and, before its code, the signature of its plan against the graph it
// was compiled from (kernel buffers, their dtypes, sizes and strides, extern ops): a loaded entry is used
// only if both match the graph it serves, else it is a miss with one warning.
#pragma once
#include "graph/graph.h"
#include "runtime/compile_times.h"
#include "runtime/program.h"

#include <memory>
#include <string>

namespace jitc::runtime {

enum class CodeSource { kCompiled, kMemory, kDisk };

// A lookup's result: the code if memory or disk had it, and the key under which to keep it otherwise.
struct CacheLookup {
  std::shared_ptr<const ProgramCode> code;
  CodeSource source = CodeSource::kCompiled;
  std::string key, key_text;
};

// tuned: compiled by mode=max-autotune (a different program for the same graph).
std::string program_key(const graph::Graph& functional, bool tuned = false);

// The code for `functional` from memory, else from disk (a disk entry is checked against the graph: a
// mismatch is a miss with one warning). use_cache false (JITC_DEBUG_DIR, which wants the assembly):
// only the key. times: a hit's loading time, if not null.
CacheLookup find_code(const graph::Graph& functional, const std::string& name, bool tuned, bool use_cache, const std::string& compile_id,
                      CompileTimes* times = nullptr);
// Keeps code compiled after a miss in memory and on disk, and logs the miss with what differs from the
// nearest entry (the same graph compiled by another jitc, LibTorch, target...).
void keep_code(const CacheLookup& lookup, const graph::Graph& functional, const std::shared_ptr<const ProgramCode>& code,
               const std::string& name, bool tuned, const std::string& compile_id);

// Static sizes whose every tensor spans fewer than 2^31 elements (kernels may index in 32 bits).
bool fits_32_bits(const graph::Graph& g);

// Drops every cached program, in memory and on disk (jitc::clear_cache()).
void clear_program_caches();

}  // namespace jitc::runtime
