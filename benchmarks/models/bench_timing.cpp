#include "models/bench_timing.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>

#include <algorithm>
#include <chrono>

namespace jitc::bench {

namespace {
bool on_gpu = false;
}  // namespace

void set_timing_on_gpu(bool gpu) { on_gpu = gpu; }

void synchronize() {
  if (on_gpu) c10::cuda::device_synchronize();
}

double seconds_of(const std::function<void()>& f) {
  synchronize();
  const auto start = std::chrono::steady_clock::now();
  f();
  synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

namespace {

// A copy: getDeviceStats returns the statistics by value.
c10::CachingDeviceAllocator::Stat cuda_stat(Bytes bytes) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  return bytes == Bytes::kBlocks ? stats.allocated_bytes[0] : stats.requested_bytes[0];
}

}  // namespace

double peak_mib_of(CountingAllocator& allocator, const std::function<void()>& f, Bytes bytes) {
  if (on_gpu) {
    synchronize();
    c10::cuda::CUDACachingAllocator::resetPeakStats(0);
    const int64_t before = cuda_stat(bytes).current;
    f();
    synchronize();
    return static_cast<double>(cuda_stat(bytes).peak - before) / (1 << 20);
  }
  allocator.reset_peak();
  const int64_t before = allocator.live_bytes();
  f();
  return static_cast<double>(allocator.peak_bytes() - before) / (1 << 20);
}

double live_mib(CountingAllocator& allocator, Bytes bytes) {
  if (on_gpu) {
    synchronize();
    return static_cast<double>(cuda_stat(bytes).current) / (1 << 20);
  }
  return static_cast<double>(allocator.live_bytes()) / (1 << 20);
}

}  // namespace jitc::bench
