// Environment switches, read once (JITC_LOGS is read by log.cpp).
#pragma once

namespace jitc::runtime {

bool env_disabled();                        // JITC_DISABLE=1: every compiled function runs eagerly
int env_recompile_limit(int configured);    // JITC_RECOMPILE_LIMIT overrides Options::recompile_limit
void reload_env();                          // tests change the environment at run time

}  // namespace jitc::runtime
