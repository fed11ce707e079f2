#include "runtime/slow_compile.h"

#include "runtime/log.h"

#include <fmt/format.h>

#include <atomic>
#include <system_error>

namespace jitc::runtime {

namespace {

std::atomic<int64_t> g_threshold_ms{1000};

}  // namespace

void set_slow_compile_threshold(std::chrono::milliseconds threshold) { g_threshold_ms = threshold.count(); }

// The start line is printed only once the threshold has passed, not at the start itself: printed for
// every graph, it would bury the few slow ones among lines about compiles that took milliseconds. A
// watcher thread waits for the threshold or the end, whichever comes first: one thread per code
// generation, which happens once per entry and costs far more than starting a thread.
SlowCompileNotice::SlowCompileNotice(std::string what, size_t ops, std::string id)
    : what_(std::move(what)), id_(std::move(id)), ops_(ops), started_(std::chrono::steady_clock::now()), threshold_(g_threshold_ms.load()) {
  if (threshold_.count() == 0) {  // tests: deterministic, no thread
    announce();
    return;
  }
  try {
    watcher_ = std::thread([this] { watch(); });
  } catch (const std::system_error&) {  // no thread to spare: the compile goes on unannounced
  }
}

void SlowCompileNotice::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!done_cv_.wait_until(lock, started_ + threshold_, [this] { return done_; })) announce();
}

void SlowCompileNotice::announce() {
  announced_ = true;
  info(fmt::format("jitc: generating code for {} ({} ops) is taking more than {:.1f} s", what_, ops_, threshold_.count() / 1e3), id_);
}

SlowCompileNotice::~SlowCompileNotice() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  done_cv_.notify_one();
  if (watcher_.joinable()) watcher_.join();
  if (!announced_) return;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  info(fmt::format("jitc: generated code for {} ({} ops) in {:.1f} s", what_, ops_, seconds), id_);
}

}  // namespace jitc::runtime
