// DiskCache: compiled programs on disk, shared by every process of the machine. An entry is the file
// <dir>/<key[0..1]>/<key>.jitc: a header line "jitc-cache <format> <size> <sha256 of payload>" and the
// payload. Writers write a temporary file and rename it into place, so readers see whole entries or
// none, whatever number of processes write at once. A truncated or corrupted entry is a miss (reported
// once, and removed); an unwritable directory turns the cache off (reported once). Over the size cap the
// least recently used entries go (a hit refreshes an entry's time).
//
// Configuration from the environment: JITC_CACHE_DIR (default $XDG_CACHE_HOME/jitc, else ~/.cache/jitc),
// JITC_DISABLE_CACHE=1, JITC_CACHE_MAX_BYTES (default 1 GiB).
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace jitc::cache {

constexpr int kFormatVersion = 4;  // bump when the payload layout or what it depends on changes

class DiskCache {
 public:
  struct Config {
    std::string dir;
    bool enabled = true;
    uint64_t max_bytes = uint64_t{1} << 30;
  };
  static Config config_from_env();

  // The process-wide cache, configured from the environment on first use.
  static DiskCache& instance();

  explicit DiskCache(Config config) : config_(std::move(config)) {}

  // Problems (a corrupt entry, an unwritable directory) go to `report`, one line each.
  void set_reporter(std::function<void(const std::string&)> report) { report_ = std::move(report); }

  std::optional<std::string> load(const std::string& key);
  void store(const std::string& key, const std::string& payload);
  void clear();  // removes every entry

  // Small side notes (what a key was made of, per graph), to explain misses; best effort, no checksum.
  void store_note(const std::string& name, const std::string& text);
  std::optional<std::string> load_note(const std::string& name) const;
  void reconfigure(Config config);

  bool enabled() const;
  std::string dir() const;
  std::string path_of(const std::string& key) const;

 private:
  void report(const std::string& message) const {
    if (report_) report_(message);
  }
  void evict_beyond_cap();

  mutable std::mutex mutex_;
  Config config_;
  std::function<void(const std::string&)> report_;
};

}  // namespace jitc::cache
