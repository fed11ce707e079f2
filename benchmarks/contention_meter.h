// How many cores other processes used while a workload was measured. On a 2-core machine a build
// next to the benchmark makes multi-threaded kernels wait for descheduled threads, and times then
// quantize to scheduler slices (4-8 ms); bench_workloads flags the rows it disturbed.
#pragma once
#include <chrono>
#include <cstdint>

namespace jitc::bench {

// Above this many other cores, a row's times are not representative.
constexpr double kContendedCores = 0.25;

class ContentionMeter {
 public:
  ContentionMeter();
  // Average cores busy outside this process (hypervisor steal included) since construction.
  double other_cores() const;

 private:
  int64_t total_busy_ticks_, own_ticks_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace jitc::bench
