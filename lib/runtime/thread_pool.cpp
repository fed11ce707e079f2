#include "runtime/thread_pool.h"

#include <ATen/Parallel.h>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace jitc::runtime {

namespace {

thread_local bool t_inside = false;  // a worker, or a caller running a parallel loop

struct Job {
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0, chunk = 1;
  std::atomic<int64_t> next{0};
  std::atomic<int> active{0};
  std::exception_ptr error;
  std::mutex error_mutex;

  void work() {
    for (;;) {
      const int64_t begin = next.fetch_add(chunk);
      if (begin >= n) return;
      try {
        (*fn)(begin, std::min(n, begin + chunk));
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(n);
      }
    }
  }
};

class Pool {
 public:
  static Pool& get() {
    static Pool* pool = new Pool();  // never destroyed: workers may outlive static destruction
    return *pool;
  }

  void run(Job& job, int helpers) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      grow(helpers);
      job_ = &job;
      wanted_ = helpers;
      ++generation_;
    }
    wake_.notify_all();
    job.work();
    std::unique_lock<std::mutex> lock(mutex_);
    wanted_ = 0;
    done_.wait(lock, [&] { return job.active.load() == 0; });
    job_ = nullptr;
  }

 private:
  void grow(int helpers) {
    while (static_cast<int>(workers_.size()) < helpers) workers_.emplace_back([this] { loop(); });
  }

  void loop() {
    t_inside = true;
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen && wanted_ > 0; });
      seen = generation_;
      --wanted_;
      Job* job = job_;
      job->active.fetch_add(1);
      lock.unlock();
      job->work();
      lock.lock();
      if (job->active.fetch_sub(1) == 1) done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  Job* job_ = nullptr;
  int wanted_ = 0;
  uint64_t generation_ = 0;
};

std::mutex g_run_mutex;  // one parallel loop at a time uses the pool; others run inline

// LibTorch's own OpenMP runtime (the wheel's libgomp), when the process has one: GOMP_parallel is what
// `#pragma omp parallel` compiles to, so kernels run on ATen's thread team. A pool of jitc's own beside
// it oversubscribed the cores: after an ATen op, OpenMP's workers spin for milliseconds (GOMP_SPINCOUNT),
// and a jitc kernel launched then shared a core between its second thread and a spinning worker.
using GompParallel = void (*)(void (*)(void*), void*, unsigned, unsigned);
GompParallel openmp_parallel() {
  static const auto f = reinterpret_cast<GompParallel>(dlsym(RTLD_DEFAULT, "GOMP_parallel"));
  return f;
}

void run_share(void* job) {  // each thread of the OpenMP team; loops inside run inline
  const bool was_inside = t_inside;
  t_inside = true;
  static_cast<Job*>(job)->work();
  t_inside = was_inside;
}

}  // namespace

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int threads = std::max(1, at::get_num_threads());
  grain = std::max<int64_t>(1, grain);
  if (t_inside || threads == 1 || n <= grain) {
    fn(0, n);
    return;
  }
  Job job;
  job.fn = &fn;
  job.n = n;
  // A few chunks per thread balance uneven rows without much contention on the counter.
  job.chunk = std::max(grain, (n + 4 * threads - 1) / (4 * threads));
  const int helpers = static_cast<int>(std::min<int64_t>(threads - 1, (n + job.chunk - 1) / job.chunk - 1));
  if (const GompParallel parallel = openmp_parallel()) {
    parallel(run_share, &job, static_cast<unsigned>(helpers + 1), 0);
  } else {
    std::unique_lock<std::mutex> exclusive(g_run_mutex, std::try_to_lock);
    if (!exclusive.owns_lock()) {  // another thread's loop holds the pool: this one runs inline
      fn(0, n);
      return;
    }
    t_inside = true;
    Pool::get().run(job, helpers);
    t_inside = false;
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace jitc::runtime
