// Environment switches, read once (JITC_LOGS is read by log.cpp).
#pragma once
#include <string>

namespace jitc::runtime {

bool env_disabled();                        // JITC_DISABLE=1: every compiled function runs eagerly
int env_recompile_limit(int configured);    // JITC_RECOMPILE_LIMIT overrides Options::recompile_limit
// JITC_DEBUG_DIR: where each compiled graph's artifacts are dumped; empty when unset. Read per compile.
std::string env_debug_dir();
void reload_env();                          // tests change the environment at run time

}  // namespace jitc::runtime
