#include "runtime/log.h"

#include "runtime/env.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <unistd.h>

namespace jitc::runtime {

namespace {

struct ArtifactName {
  const char* name;
  Artifact artifact;
};
constexpr ArtifactName kArtifacts[] = {
    {"recompiles", Artifact::kRecompiles},
    {"recompiles_verbose", Artifact::kRecompilesVerbose},
    {"graph_breaks", Artifact::kGraphBreaks},
    {"guards", Artifact::kGuards},
    {"dynamic", Artifact::kDynamic},
    {"graph_code", Artifact::kGraphCode},
    {"output_code", Artifact::kOutputCode},
    {"perf_hints", Artifact::kPerfHints},
    {"fusion", Artifact::kFusion},
    {"schedule", Artifact::kSchedule},
    {"cache", Artifact::kCache},
    {"compile_times", Artifact::kCompileTimes},
    {"passes", Artifact::kPasses},
    {"aot_graphs", Artifact::kAotGraphs},
};

uint32_t bit(Artifact a) { return 1u << static_cast<int>(a); }

// Components turn on groups of artifacts, as TORCH_LOGS's "dynamo"/"inductor" do; "+name" adds debug.
uint32_t component_bits(std::string_view name, bool debug) {
  const uint32_t dynamo = bit(Artifact::kRecompiles) | bit(Artifact::kGraphBreaks) | bit(Artifact::kGuards);
  uint32_t bits = 0;
  if (name == "dynamo" || name == "jitc" || name == "all") bits |= dynamo | bit(Artifact::kDynamic);
  if (name == "inductor" || name == "jitc" || name == "all") bits |= bit(Artifact::kFusion) | bit(Artifact::kCache);
  if (bits && debug) bits |= bit(Artifact::kDebug);
  return bits;
}

std::atomic<uint32_t> g_enabled{0};
std::atomic<bool> g_initialized{false};
std::mutex g_mutex;
std::function<void(const std::string&)> g_sink;

void emit(const std::string& text) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_sink) return g_sink(text);
  std::fputs(text.c_str(), stderr);
}

std::string prefix(char level, std::string_view compile_id, std::string_view artifact, std::source_location where) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto usec = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  localtime_r(&t, &tm);
  std::string_view file = where.file_name();
  if (auto at = file.rfind("lib/"); at != std::string_view::npos) file.remove_prefix(at + 4);
  std::string p = fmt::format("{}{:02}{:02} {:02}:{:02}:{:02}.{:06} {} {}:{}]", level, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                              tm.tm_sec, usec, getpid(), file, where.line());
  if (!compile_id.empty()) p += fmt::format(" [{}]", compile_id);
  if (!artifact.empty()) p += fmt::format(" [__{}]", artifact);
  return p + " ";
}

void write_lines(char level, std::string_view message, std::string_view compile_id, std::string_view artifact, std::source_location where) {
  const std::string p = prefix(level, compile_id, artifact, where);
  std::string out;
  size_t start = 0;
  while (start <= message.size()) {
    const size_t end = message.find('\n', start);
    out += p;
    out += message.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    out += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  emit(out);
}

const char* artifact_name(Artifact a) {
  for (const auto& n : kArtifacts)
    if (n.artifact == a) return n.name;
  return "debug";
}

void ensure_initialized() {
  if (g_initialized.load(std::memory_order_acquire)) return;
  set_logs(env_string("JITC_LOGS"));
}

}  // namespace

void set_logs(std::string_view spec) {
  uint32_t bits = 0;
  std::string invalid;
  size_t start = 0;
  while (start < spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view item = spec.substr(start, end - start);
    start = end + 1;
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    const bool debug = item.front() == '+';
    const bool off = item.front() == '-';
    if (debug || off) item.remove_prefix(1);
    bool known = false;
    for (const auto& n : kArtifacts)
      if (item == n.name) {
        bits |= off ? 0 : bit(n.artifact);
        known = true;
      }
    if (uint32_t c = component_bits(item, debug)) {
      bits |= off ? 0 : c;
      known = true;
    }
    if (!known) invalid += (invalid.empty() ? "" : ", ") + std::string(item);
  }
  g_enabled.store(bits, std::memory_order_relaxed);
  g_initialized.store(true, std::memory_order_release);
  if (!invalid.empty()) {
    std::string names;
    for (const auto& n : kArtifacts) names += std::string(names.empty() ? "" : ", ") + n.name;
    write_lines('W',
                fmt::format("Invalid log settings: {}, must be a comma separated list of fully qualified module "
                            "names, registered log names or registered artifact names.\nValid names: {}, dynamo, "
                            "inductor, jitc, all",
                            invalid, names),
                {}, {}, std::source_location::current());
  }
}

void set_log_sink(std::function<void(const std::string&)> sink) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_sink = std::move(sink);
}

bool log_enabled(Artifact artifact) {
  ensure_initialized();
  return g_enabled.load(std::memory_order_relaxed) & bit(artifact);
}

void log(Artifact artifact, std::string_view message, std::string_view compile_id, std::source_location where) {
  if (!log_enabled(artifact)) return;
  write_lines('V', message, compile_id, artifact_name(artifact), where);
}

void warn(std::string_view message, std::string_view compile_id, std::source_location where) {
  write_lines('W', message, compile_id, {}, where);
}

void info(std::string_view message, std::string_view compile_id, std::source_location where) {
  write_lines('I', message, compile_id, {}, where);
}

}  // namespace jitc::runtime
