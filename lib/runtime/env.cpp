#include "runtime/env.h"

#include "runtime/env_parse.h"
#include "runtime/log.h"

#include <fmt/format.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

namespace jitc::runtime {

namespace {

std::atomic<int> g_disabled{-1};
std::atomic<int> g_limit{-2};  // -2: not read yet, -1: not set (or not readable)

// Once per variable and value: a setting read at every compile must not repeat its warning.
void warn_unreadable(const char* name, const std::string& value, const std::string& expected, const std::string& instead) {
  static std::mutex mutex;
  static auto& warned = *new std::set<std::string>;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!warned.insert(fmt::format("{}={}", name, value)).second) return;
  }
  warn(fmt::format("jitc: {}='{}' cannot be read ({} expected); using {} instead", name, value, expected, instead));
}

int read_limit() {
  const std::string v = env_string("JITC_RECOMPILE_LIMIT");
  if (v.empty()) return -1;
  if (auto limit = parse_integer(v, 0, INT_MAX)) return static_cast<int>(*limit);
  warn_unreadable("JITC_RECOMPILE_LIMIT", v, fmt::format("a whole number in [0, {}]", INT_MAX),
                  "each function's Options::recompile_limit (default 8)");
  return -1;
}

}  // namespace

std::string env_string(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool env_bool(const char* name, bool fallback) {
  const std::string v = env_string(name);
  if (v.empty()) return fallback;
  if (auto b = parse_bool(v)) return *b;
  warn_unreadable(name, v, "0, 1, true or false", fallback ? "1" : "0");
  return fallback;
}

uint64_t env_size(const char* name, uint64_t fallback) {
  const std::string v = env_string(name);
  if (v.empty()) return fallback;
  if (auto bytes = parse_size(v)) return *bytes;
  warn_unreadable(
      name, v,
      "a whole number of bytes with an optional unit: K, M, G, T or KiB, MiB, GiB, TiB (powers of 1024), KB, MB, GB, TB (powers of 1000)",
      fmt::format("{} bytes", fallback));
  return fallback;
}

bool env_disabled() {
  int d = g_disabled.load(std::memory_order_relaxed);
  if (d < 0) {
    d = env_bool("JITC_DISABLE", false);
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

std::string env_debug_dir() { return env_string("JITC_DEBUG_DIR"); }

bool env_cuda_pdl() { return env_bool("JITC_CUDA_PDL", true); }

bool env_combo_kernels() { return env_bool("JITC_COMBO_KERNELS", true); }

bool env_layout_optimization() { return env_bool("JITC_LAYOUT_OPTIMIZATION", true); }

std::optional<bool> env_compile_in_background() {
  if (env_string("JITC_COMPILE_IN_BACKGROUND").empty()) return std::nullopt;
  return env_bool("JITC_COMPILE_IN_BACKGROUND", false);
}

bool env_build_at_trace() { return env_bool("JITC_BUILD_AT_TRACE", true); }

bool env_strict() { return env_bool("JITC_STRICT", false); }

cache::DiskCache::Config env_disk_cache() {
  cache::DiskCache::Config c;
  c.dir = env_string("JITC_CACHE_DIR");
  if (c.dir.empty()) {
    const std::string xdg = env_string("XDG_CACHE_HOME"), home = env_string("HOME");
    c.dir = !xdg.empty() ? xdg + "/jitc" : !home.empty() ? home + "/.cache/jitc" : "";
  }
  c.enabled = !c.dir.empty() && !env_bool("JITC_DISABLE_CACHE", false);
  c.max_bytes = env_size("JITC_CACHE_MAX_BYTES", c.max_bytes);
  return c;
}

void reload_env() {
  g_disabled.store(-1);
  g_limit.store(-2);
}

}  // namespace jitc::runtime
