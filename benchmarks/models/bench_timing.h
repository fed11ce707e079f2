// What bench_models and bench_training share: a call's time (on the GPU, synchronized before and after),
// the median of such times, and the memory a call allocates beyond what was live before it.
#pragma once
#include "counting_allocator.h"

#include <functional>
#include <vector>

namespace jitc::bench {

// Whether timed calls run on the GPU (set once by main).
void set_timing_on_gpu(bool gpu);
void synchronize();
double seconds_of(const std::function<void()>& f);
double median(std::vector<double> v);
// MiB allocated during f beyond what was live before it: the CPU allocator, counted; on CUDA the caching
// allocator's peak statistic.
double peak_mib_of(CountingAllocator& allocator, const std::function<void()>& f);

}  // namespace jitc::bench
