#include "cache/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace jitc::cache::files {

std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return a.back() == '/' ? a + b : a + "/" + b;
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::optional<Stat> stat(const std::string& path) {
  struct ::stat s;
  if (::lstat(path.c_str(), &s) != 0) return std::nullopt;
  Stat out;
  out.size = static_cast<uint64_t>(s.st_size);
  out.mtime_ns = int64_t{s.st_mtim.tv_sec} * 1000000000 + s.st_mtim.tv_nsec;
  out.regular = S_ISREG(s.st_mode);
  out.directory = S_ISDIR(s.st_mode);
  return out;
}

std::string make_directories(const std::string& path) {
  if (path.empty()) return "";
  if (auto s = stat(path)) return s->directory ? "" : std::strerror(ENOTDIR);
  const std::string parent = parent_of(path);
  if (!parent.empty() && parent != path) {
    const std::string why = make_directories(parent);
    if (!why.empty()) return why;
  }
  // Another process may create it between the check and here: EEXIST of a directory is success.
  if (::mkdir(path.c_str(), 0777) != 0 && !(errno == EEXIST && stat(path) && stat(path)->directory)) return std::strerror(errno);
  return "";
}

std::optional<std::string> read(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return n == 0 ? std::optional<std::string>(std::move(out)) : std::nullopt;
    }
    out.append(chunk, static_cast<size_t>(n));
  }
}

std::string write(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return std::strerror(errno);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return std::strerror(error);
    }
    done += static_cast<size_t>(n);
  }
  // close reports what a full disk or quota refused after the last write.
  if (::close(fd) != 0) return std::strerror(errno);
  return "";
}

bool rename(const std::string& from, const std::string& to) { return ::rename(from.c_str(), to.c_str()) == 0; }

bool remove(const std::string& path) { return ::remove(path.c_str()) == 0; }

void remove_tree(const std::string& path) {
  // Entries that another thread or process removes first are simply gone: every failure is ignored and
  // the walk goes on, so that concurrent removals of one tree all finish with nothing left of it.
  const auto s = stat(path);
  if (!s) return;
  if (s->directory)  // lstat: a symbolic link is removed, never followed
    for (const auto& name : list(path)) remove_tree(join(path, name));
  remove(path);
}

bool set_mtime(const std::string& path, int64_t mtime_ns) {
  struct timespec times[2];
  times[0].tv_sec = times[1].tv_sec = mtime_ns / 1000000000;
  times[0].tv_nsec = times[1].tv_nsec = mtime_ns % 1000000000;
  return ::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0;
}

bool touch(const std::string& path) { return ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) == 0; }

int64_t now_ns() {
  struct timespec t;
  ::clock_gettime(CLOCK_REALTIME, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

std::vector<std::string> list(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return names;
  while (const struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  return names;
}

namespace {

void collect(const std::string& dir, std::vector<File>& out) {
  for (const auto& name : list(dir)) {
    const std::string path = join(dir, name);
    const auto s = stat(path);
    if (!s) continue;  // removed meanwhile
    if (s->directory) collect(path, out);
    if (s->regular) out.push_back({path, *s});
  }
}

}  // namespace

std::vector<File> list_tree(const std::string& dir) {
  std::vector<File> out;
  collect(dir, out);
  return out;
}

}  // namespace jitc::cache::files
