#include "runtime/background_threads.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace jitc::runtime {

namespace {

// The threads started and not yet joined; those done are joined by the next start (or at exit). Never
// destroyed: exit's handler reads it after other statics are gone.
struct Threads {
  std::mutex mutex;
  std::vector<std::thread> running;
  std::vector<std::thread::id> done;

  // Joins the threads that said they are done (each is at most returning from its function).
  void join_done(std::unique_lock<std::mutex>& lock) {
    std::vector<std::thread> finishing;
    for (auto it = running.begin(); it != running.end();) {
      const bool is_done = std::find(done.begin(), done.end(), it->get_id()) != done.end();
      if (is_done) finishing.push_back(std::move(*it)), it = running.erase(it);
      else ++it;
    }
    done.clear();
    lock.unlock();  // a finishing thread may still take the lock to report
    for (std::thread& t : finishing) t.join();
    lock.lock();
  }
};

Threads& threads() {
  static Threads& all = *new Threads;
  return all;
}

void join_all_at_exit() {
  std::vector<std::thread> running;
  {
    std::lock_guard<std::mutex> lock(threads().mutex);
    running.swap(threads().running);
  }
  for (std::thread& t : running) t.join();
}

}  // namespace

void start_background_thread(std::function<void()> work) {
  Threads& all = threads();
  std::unique_lock<std::mutex> lock(all.mutex);
  all.join_done(lock);
  std::atexit(join_all_at_exit);
  all.running.emplace_back([work = std::move(work), &all]() mutable {
    setpriority(PRIO_PROCESS, 0, 19);  // this thread's nice value (Linux: per thread)
    work();
    work = nullptr;  // what it holds goes before the thread is reported done
    std::lock_guard<std::mutex> done_lock(all.mutex);
    all.done.push_back(std::this_thread::get_id());
  });
}

}  // namespace jitc::runtime
