#include "cache/disk_cache.h"

#include "cache/sha256.h"
#include "runtime/env.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace jitc::cache {

namespace fs = std::filesystem;

namespace {

std::string header_of(const std::string& payload) {
  return fmt::format("jitc-cache {} {} {}\n", kFormatVersion, payload.size(), sha256_hex(payload));
}

// The payload of a whole, intact entry; nullopt (and why) otherwise.
std::optional<std::string> parse_entry(const std::string& bytes, std::string* why) {
  const size_t eol = bytes.find('\n');
  if (eol == std::string::npos) {
    *why = bytes.empty() ? "the file is empty" : "the header is truncated";
    return std::nullopt;
  }
  std::istringstream header(bytes.substr(0, eol));
  std::string magic, checksum;
  int format = 0;
  size_t size = 0;
  if (!(header >> magic >> format >> size >> checksum) || magic != "jitc-cache") {
    *why = "the header is not a jitc cache header";
    return std::nullopt;
  }
  if (format != kFormatVersion) {
    *why = fmt::format("format {} (this jitc reads {})", format, kFormatVersion);
    return std::nullopt;
  }
  std::string payload = bytes.substr(eol + 1);
  if (payload.size() != size) {
    *why = fmt::format("{} bytes of payload, the header says {} (truncated?)", payload.size(), size);
    return std::nullopt;
  }
  if (sha256_hex(payload) != checksum) {
    *why = "the checksum does not match the payload (corrupted)";
    return std::nullopt;
  }
  return payload;
}

}  // namespace

DiskCache::Config DiskCache::config_from_env() {
  Config c;
  c.dir = runtime::env_string("JITC_CACHE_DIR");
  if (c.dir.empty()) {
    const std::string xdg = runtime::env_string("XDG_CACHE_HOME"), home = runtime::env_string("HOME");
    c.dir = !xdg.empty() ? xdg + "/jitc" : !home.empty() ? home + "/.cache/jitc" : "";
  }
  c.enabled = !c.dir.empty() && !runtime::env_bool("JITC_DISABLE_CACHE", false);
  c.max_bytes = runtime::env_size("JITC_CACHE_MAX_BYTES", c.max_bytes);
  return c;
}

DiskCache& DiskCache::instance() {
  static DiskCache* cache = new DiskCache(config_from_env());  // never destroyed: used until exit
  return *cache;
}

void DiskCache::reconfigure(Config config) {
  std::lock_guard<std::mutex> lock(mutex_);
  config_ = std::move(config);
}

bool DiskCache::enabled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return config_.enabled;
}

std::string DiskCache::dir() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return config_.dir;
}

std::string DiskCache::path_of(const std::string& key) const {
  return (fs::path(dir()) / key.substr(0, 2) / (key + ".jitc")).string();
}

std::optional<std::string> DiskCache::load(const std::string& key) {
  if (!enabled()) return std::nullopt;
  const std::string path = path_of(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string why;
  auto payload = parse_entry(bytes.str(), &why);
  if (!payload) {
    report(fmt::format("jitc: ignoring the cache entry {}: {}; it is compiled again", path, why));
    std::error_code ignored;
    fs::remove(path, ignored);
    return std::nullopt;
  }
  std::error_code ignored;
  fs::last_write_time(path, fs::file_time_type::clock::now(), ignored);  // recently used
  return payload;
}

void DiskCache::store(const std::string& key, const std::string& payload) {
  if (!enabled()) return;
  static std::atomic<uint64_t> counter{0};
  const fs::path path = path_of(key);
  const fs::path temporary = path.string() + fmt::format(".tmp.{}.{}", getpid(), counter++);
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  {
    std::ofstream out(temporary, std::ios::binary);
    if (out) out << header_of(payload) << payload;
    if (!out || error) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!config_.enabled) return;
        config_.enabled = false;
      }
      report(fmt::format("jitc: the disk cache is off for this process: cannot write into {} ({}); set JITC_CACHE_DIR "
                         "to a writable directory or JITC_DISABLE_CACHE=1",
                         path.parent_path().string(), error ? error.message() : "write failed"));
      return;
    }
  }
  fs::rename(temporary, path, error);  // atomic: readers see the old entry, the new one, or none
  if (error) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    return;
  }
  evict_beyond_cap();
}

void DiskCache::evict_beyond_cap() {
  struct File {
    fs::path path;
    fs::file_time_type time;
    uint64_t size;
  };
  std::vector<File> files;
  uint64_t total = 0;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(dir(), error); !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (!it->is_regular_file(error) || it->path().extension() != ".jitc") continue;
    File f{it->path(), it->last_write_time(error), static_cast<uint64_t>(it->file_size(error))};
    total += f.size;
    files.push_back(std::move(f));
  }
  uint64_t cap;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cap = config_.max_bytes;
  }
  if (total <= cap) return;
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) { return a.time < b.time; });
  for (const auto& f : files) {
    if (total <= cap) break;
    std::error_code ignored;
    if (fs::remove(f.path, ignored)) total -= f.size;
  }
}

void DiskCache::store_note(const std::string& name, const std::string& text) {
  if (!enabled()) return;
  static std::atomic<uint64_t> counter{0};
  const fs::path path = fs::path(dir()) / "notes" / name;
  const fs::path temporary = path.string() + fmt::format(".tmp.{}.{}", getpid(), counter++);
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  {
    std::ofstream out(temporary, std::ios::binary);
    out << text;
    if (!out) return;
  }
  fs::rename(temporary, path, error);
  if (error) fs::remove(temporary, error);
}

std::optional<std::string> DiskCache::load_note(const std::string& name) const {
  if (!enabled()) return std::nullopt;
  std::ifstream in(fs::path(dir()) / "notes" / name, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void DiskCache::clear() {
  std::error_code ignored;
  for (auto it = fs::directory_iterator(dir(), ignored); !ignored && it != fs::directory_iterator(); it.increment(ignored)) {
    if (it->is_directory() && (it->path().filename().string().size() == 2 || it->path().filename() == "notes"))
      fs::remove_all(it->path(), ignored);
  }
}

}  // namespace jitc::cache
