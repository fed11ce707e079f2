#include "runtime/env.h"

#include <atomic>
#include <cstdlib>
#include <string>

namespace jitc::runtime {

namespace {

std::atomic<int> g_disabled{-1};
std::atomic<int> g_limit{-2};  // -2: not read yet, -1: not set

int read_limit() {
  const char* v = std::getenv("JITC_RECOMPILE_LIMIT");
  if (!v || !*v) return -1;
  try {
    return std::max(0, std::stoi(v));
  } catch (...) {
    return -1;
  }
}

}  // namespace

bool env_disabled() {
  int d = g_disabled.load(std::memory_order_relaxed);
  if (d < 0) {
    const char* v = std::getenv("JITC_DISABLE");
    d = v && std::string(v) != "0" && *v;
    g_disabled.store(d, std::memory_order_relaxed);
  }
  return d;
}

int env_recompile_limit(int configured) {
  int l = g_limit.load(std::memory_order_relaxed);
  if (l == -2) {
    l = read_limit();
    g_limit.store(l, std::memory_order_relaxed);
  }
  return l >= 0 ? l : configured;
}

std::string env_debug_dir() {
  const char* v = std::getenv("JITC_DEBUG_DIR");
  return v ? v : "";
}

void reload_env() {
  g_disabled.store(-1);
  g_limit.store(-2);
}

}  // namespace jitc::runtime
