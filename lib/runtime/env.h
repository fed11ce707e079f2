// Every JITC_* environment variable is read here (lib/ has no other getenv). Values are parsed strictly
// (env_parse.h); one that cannot be read is reported once, naming the variable, the value and what is
// used instead, and the default applies.
#pragma once
#include "cache/disk_cache.h"

#include <cstdint>
#include <optional>
#include <string>

namespace jitc::runtime {

bool env_disabled();                      // JITC_DISABLE=1: every compiled function runs eagerly
int env_recompile_limit(int configured);  // JITC_RECOMPILE_LIMIT overrides Options::recompile_limit
// JITC_DEBUG_DIR: where each compiled graph's artifacts are dumped; empty when unset. Read per compile.
std::string env_debug_dir();
bool env_cuda_pdl();  // JITC_CUDA_PDL=0 launches CUDA kernels plainly
// JITC_COMBO_KERNELS=0 launches every CUDA kernel alone (cuda/combos.h), for comparisons. Read per compile.
bool env_combo_kernels();
// JITC_LAYOUT_OPTIMIZATION=0 leaves every convolution in its traced layout (inductor/channels_last.h), as
// TORCHINDUCTOR_LAYOUT_OPTIMIZATION=0 does, for comparisons. Read per compile.
bool env_layout_optimization();
// JITC_COMPILE_IN_BACKGROUND=1 / =0 overrides Options::compile_in_background (on by default); unset:
// the option decides. Read per call until a graph's program is built.
std::optional<bool> env_compile_in_background();
// JITC_BUILD_AT_TRACE=0 starts a graph's build at its first hit instead of at its trace (Engine::request_build):
// a static entry that a size change replaces then never builds, which the test suite's counts of compiled
// programs rely on. Read per trace.
bool env_build_at_trace();
bool env_strict();  // JITC_STRICT=1: bugs reach the caller (runtime/strict.h)
// The disk cache's directory (JITC_CACHE_DIR, else $XDG_CACHE_HOME/jitc or ~/.cache/jitc), whether it is
// on (JITC_DISABLE_CACHE) and its size bound (JITC_CACHE_MAX_BYTES).
cache::DiskCache::Config env_disk_cache();

// The readers behind the switches above, for the variables read elsewhere (JITC_LOGS, the disk cache's).
// Unset or empty: "" / the fallback.
std::string env_string(const char* name);
bool env_bool(const char* name, bool fallback);
uint64_t env_size(const char* name, uint64_t fallback);  // bytes, with units: see parse_size

void reload_env();  // tests change the environment at run time

}  // namespace jitc::runtime
