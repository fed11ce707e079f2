// DiskCache: compiled programs on disk, shared by every process of the machine. A key is the full text
// a program was compiled from; its entry is the file <dir>/<h[0..1]>/<h>.jitc, h = sha256(key), holding
// the key itself and the payload (entry.h). Writers write a temporary file and rename it into place, so
// readers see whole entries or none, whatever number of processes write at once. A truncated or
// corrupted entry, or one written for another key, is a miss (reported once, and removed); an unwritable
// directory turns the cache off (reported once). A process's first store, and then a store after each
// sixteenth of the size cap written, scans the directory: it removes stale temporaries of killed writers
// (temporaries.h), over the size cap the least recently used entries (a hit refreshes an entry's time),
// and the oldest notes beyond max_notes. (A scan on every store read tens of thousands of files per
// compile in a well-used cache; between scans the cache may pass its cap by that sixteenth.)
//
// Its Config comes from whoever owns the cache: the runtime reads it from the environment
// (runtime::env_disk_cache: JITC_CACHE_DIR, JITC_DISABLE_CACHE, JITC_CACHE_MAX_BYTES); the cache reads none.
#pragma once
#include "cache/entry.h"

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace jitc::cache {

class DiskCache {
 public:
  struct Config {
    std::string dir;
    bool enabled = true;
    uint64_t max_bytes = uint64_t{1} << 30;
    size_t max_notes = 4096;  // one per graph compiled: they were never removed
  };

  explicit DiskCache(Config config) : config_(std::move(config)) {}

  // Problems (a corrupt entry, an unwritable directory) go to `report`, one line each.
  void set_reporter(std::function<void(const std::string&)> report) { report_ = std::move(report); }

  // key: the full key text (not a hash of it).
  std::optional<std::string> load(const std::string& key);
  void store(const std::string& key, const std::string& payload);
  void clear();  // removes every entry and note

  // Small side notes (what a key was made of, per graph), to explain misses; best effort, no checksum.
  void store_note(const std::string& name, const std::string& text);
  std::optional<std::string> load_note(const std::string& name) const;

  bool enabled() const;
  std::string dir() const;
  std::string path_of(const std::string& key) const;
  static std::string name_of(const std::string& key);  // the file name's stem: sha256 of the key

 private:
  void report(const std::string& message) const {
    if (report_) report_(message);
  }
  void disable(const std::string& dir, const std::string& why);
  bool tidy_due(size_t bytes_stored);
  void tidy();  // stale temporaries, then eviction beyond the cap and of old notes

  mutable std::mutex mutex_;
  Config config_;
  bool tidied_ = false;
  uint64_t stored_since_tidy_ = 0;
  std::function<void(const std::string&)> report_;
};

}  // namespace jitc::cache
