#include "cache/disk_cache.h"

#include "cache/files.h"
#include "cache/sha256.h"
#include "cache/temporaries.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace jitc::cache {

namespace {

// Writes `bytes` to `path` through a temporary renamed into place (atomic: readers see the old file,
// the new one, or none). False if not stored; `refused` then says why if the directory or the disk
// refuses writes ("" when only the rename failed, e.g. a parent removed by clear() meanwhile).
bool write_atomically(const std::string& path, const std::string& bytes, std::string* refused) {
  *refused = files::make_directories(files::parent_of(path));
  if (!refused->empty()) return false;
  const std::string temporary = temporary_for(path);
  *refused = files::write(temporary, bytes);
  const bool stored = refused->empty() && files::rename(temporary, path);
  if (!stored) files::remove(temporary);
  return stored;
}

}  // namespace

bool DiskCache::enabled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return config_.enabled;
}

std::string DiskCache::dir() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return config_.dir;
}

std::string DiskCache::name_of(const std::string& key) { return sha256_hex(key); }

std::string DiskCache::path_of(const std::string& key) const {
  const std::string name = name_of(key);
  return files::join(files::join(dir(), name.substr(0, 2)), name + ".jitc");
}

std::optional<std::string> DiskCache::load(const std::string& key) {
  if (!enabled()) return std::nullopt;
  const std::string path = path_of(key);
  const auto bytes = files::read(path);
  if (!bytes) return std::nullopt;
  EntryProblem problem;
  std::string why;
  auto payload = decode_entry(*bytes, key, &problem, &why);
  if (!payload) {
    report(fmt::format("jitc: ignoring the cache entry {}: {}; it is compiled again", path, why));
    files::remove(path);
    return std::nullopt;
  }
  files::touch(path);  // recently used
  return payload;
}

void DiskCache::store(const std::string& key, const std::string& payload) {
  if (!enabled()) return;
  const std::string path = path_of(key);
  std::string refused;
  const std::string bytes = encode_entry(key, payload);
  if (write_atomically(path, bytes, &refused)) {
    if (tidy_due(bytes.size())) tidy();
    return;
  }
  if (!refused.empty()) disable(files::parent_of(path), refused);
}

void DiskCache::disable(const std::string& dir, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!config_.enabled) return;
    config_.enabled = false;
  }
  report(
      fmt::format("jitc: the disk cache is off for this process: cannot write into {} ({}); set JITC_CACHE_DIR "
                  "to a writable directory or JITC_DISABLE_CACHE=1",
                  dir, why));
}

bool DiskCache::tidy_due(size_t bytes_stored) {
  std::lock_guard<std::mutex> lock(mutex_);
  stored_since_tidy_ += bytes_stored;
  if (tidied_ && stored_since_tidy_ <= config_.max_bytes / 16) return false;
  tidied_ = true;
  stored_since_tidy_ = 0;
  return true;
}

namespace {

void oldest_first(std::vector<files::File>& fs) {
  std::sort(fs.begin(), fs.end(), [](const auto& a, const auto& b) { return a.stat.mtime_ns < b.stat.mtime_ns; });
}

}  // namespace

void DiskCache::tidy() {
  std::vector<files::File> entries, notes;
  uint64_t total = 0;
  const int64_t now = files::now_ns();
  const std::string notes_dir = files::join(dir(), "notes");
  for (auto& f : files::list_tree(dir())) {
    if (is_temporary(f.path)) {
      if (is_stale_temporary(f, now)) files::remove(f.path);
    } else if (f.path.ends_with(".jitc")) {
      total += f.stat.size;
      entries.push_back(std::move(f));
    } else if (files::parent_of(f.path) == notes_dir) {
      notes.push_back(std::move(f));
    }
  }
  uint64_t cap;
  size_t max_notes;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cap = config_.max_bytes;
    max_notes = config_.max_notes;
  }
  if (notes.size() > max_notes) {
    oldest_first(notes);
    for (size_t i = 0; i + max_notes < notes.size(); ++i) files::remove(notes[i].path);
  }
  if (total <= cap) return;
  oldest_first(entries);
  for (const auto& f : entries) {
    if (total <= cap) break;
    if (files::remove(f.path)) total -= f.stat.size;
  }
}

void DiskCache::store_note(const std::string& name, const std::string& text) {
  if (!enabled()) return;
  std::string ignored;  // notes are best effort
  write_atomically(files::join(files::join(dir(), "notes"), name), text, &ignored);
}

std::optional<std::string> DiskCache::load_note(const std::string& name) const {
  if (!enabled()) return std::nullopt;
  return files::read(files::join(files::join(dir(), "notes"), name));
}

void DiskCache::clear() {
  const std::string root = dir();
  for (const auto& name : files::list(root)) {
    const std::string path = files::join(root, name);
    const auto s = files::stat(path);
    if (s && s->directory && (name.size() == 2 || name == "notes")) files::remove_tree(path);
  }
}

}  // namespace jitc::cache
