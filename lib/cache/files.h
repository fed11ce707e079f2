// The few file operations jitc needs, on POSIX calls only. jitc must not call std::filesystem: the
// LibTorch wheel's libtorch.so and libtorch_cpu.so export their own copy of its symbols, and a program
// that links ${TORCH_LIBRARIES} before jitc (as LibTorch's docs show) binds jitc's calls to that copy,
// whose ABI differs (remove_all then crashes). Paths are plain strings; nothing here throws.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace jitc::cache::files {

// "a" + "/" + "b", without doubling a trailing slash.
std::string join(const std::string& a, const std::string& b);
std::string parent_of(const std::string& path);  // "" for a bare name
std::string name_of(const std::string& path);    // the last component

struct Stat {
  uint64_t size = 0;
  int64_t mtime_ns = 0;  // modification time, nanoseconds since the epoch
  bool regular = false;
  bool directory = false;
};
std::optional<Stat> stat(const std::string& path);  // without following a final symbolic link

// mkdir -p. Returns "" on success, else why not (strerror).
std::string make_directories(const std::string& path);

// The whole file; nullopt if it cannot be read.
std::optional<std::string> read(const std::string& path);
// Creates (or truncates) `path` and writes `bytes`. Returns "" on success, else why not; a failed write
// leaves a partial file for the caller to remove.
std::string write(const std::string& path, const std::string& bytes);

bool rename(const std::string& from, const std::string& to);  // atomic within one file system
bool remove(const std::string& path);                         // a file or an empty directory
void remove_tree(const std::string& path);                    // rm -rf; concurrent removals tolerated
bool set_mtime(const std::string& path, int64_t mtime_ns);    // also the access time
bool touch(const std::string& path);                          // times := now
int64_t now_ns();                                             // the clock file times use

// The names in a directory (no "." or ".."); empty if it cannot be read.
std::vector<std::string> list(const std::string& dir);

// Every regular file under `dir`, recursively (symbolic links are not followed).
struct File {
  std::string path;
  Stat stat;
};
std::vector<File> list_tree(const std::string& dir);

}  // namespace jitc::cache::files
