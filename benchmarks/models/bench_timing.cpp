#include "models/bench_timing.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <chrono>
#include <set>

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

void profile_calls(const std::string& path, const std::function<void()>& call) {
  using namespace torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  std::set<ActivityType> activities = {ActivityType::CPU};
  if (on_gpu) activities.insert(ActivityType::CUDA);
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  prepareProfiler(config, activities);
  enableProfiler(config, activities);
  for (int i = 0; i < kProfiledCalls; ++i) call();
  synchronize();
  disableProfiler()->save(path);
}

}  // namespace jitc::bench
