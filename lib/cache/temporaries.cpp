#include "cache/temporaries.h"

#include <fmt/format.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <optional>

namespace jitc::cache {

namespace {

constexpr const char* kMarker = ".tmp.";

bool all_digits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// The writer's pid in "<path>.tmp.<pid>.<n>"; nullopt for any other name.
std::optional<pid_t> writer_of(const std::string& path) {
  const std::string name = files::name_of(path);
  const size_t marker = name.rfind(kMarker);
  if (marker == std::string::npos) return std::nullopt;
  const std::string rest = name.substr(marker + std::string(kMarker).size());
  const size_t dot = rest.find('.');
  if (dot == std::string::npos || !all_digits(rest.substr(0, dot)) || !all_digits(rest.substr(dot + 1))) return std::nullopt;
  if (dot > 9) return std::nullopt;  // not a pid
  return static_cast<pid_t>(std::stol(rest.substr(0, dot)));
}

// EPERM: the process exists but belongs to another user.
bool process_exists(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

}  // namespace

std::string temporary_for(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + fmt::format("{}{}.{}", kMarker, getpid(), counter++);
}

bool is_temporary(const std::string& path) { return writer_of(path).has_value(); }

bool is_stale_temporary(const files::File& file, int64_t now_ns) {
  const auto pid = writer_of(file.path);
  if (!pid) return false;
  return !process_exists(*pid) || now_ns - file.stat.mtime_ns > kStaleTemporaryNs;
}

}  // namespace jitc::cache
