// A long code generation announces itself: one INFO line once it has run for a second (so a user
// watching a silent process knows why), and one when it ends. Graphs that compile faster print nothing.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace jitc::runtime {

class SlowCompileNotice {
 public:
  // `what`: the program's name; `ops`: its graph's op count; `id`: the compile id for the log prefix.
  SlowCompileNotice(std::string what, size_t ops, std::string id);
  ~SlowCompileNotice();  // the end line, if the start line was printed
  SlowCompileNotice(const SlowCompileNotice&) = delete;
  SlowCompileNotice& operator=(const SlowCompileNotice&) = delete;

 private:
  void watch();
  void announce();

  std::string what_, id_;
  size_t ops_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::milliseconds threshold_;
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  bool announced_ = false;
  std::thread watcher_;
};

// How long a compile runs before it is announced (a second); tests lower it, and 0 announces every compile
// as it starts.
void set_slow_compile_threshold(std::chrono::milliseconds threshold);

}  // namespace jitc::runtime
