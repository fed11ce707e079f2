// What bench_models and bench_training share: a call's time (on the GPU, synchronized before and after),
// the median of such times, the memory a call allocates beyond what was live before it, and a profile of
// a few calls.
#pragma once
#include "counting_allocator.h"

#include <functional>
#include <string>
#include <vector>

namespace jitc::bench {

// Whether timed calls run on the GPU (set once by main).
void set_timing_on_gpu(bool gpu);
void synchronize();
double seconds_of(const std::function<void()>& f);
double median(std::vector<double> v);
// What a CUDA peak counts: the caching allocator's blocks (allocated_bytes: a request may take a larger
// block, so the order of allocations moves it by up to a MiB or so per live block), or the bytes the
// tensors asked for (requested_bytes). On the CPU both are the bytes asked for.
enum class Bytes { kBlocks, kRequested };
// MiB allocated during f beyond what was live before it: the CPU allocator, counted; on CUDA the caching
// allocator's peak statistic.
double peak_mib_of(CountingAllocator& allocator, const std::function<void()>& f, Bytes bytes = Bytes::kBlocks);
// MiB live now (the same counters).
double live_mib(CountingAllocator& allocator, Bytes bytes = Bytes::kBlocks);

// Writes a chrome trace of kProfiledCalls calls of `call` (LibTorch's kineto profiler; with the GPU's
// kernels when timing runs on the GPU, as torch.profiler records torch.compile's in peer_profile.py).
constexpr int kProfiledCalls = 3;
void profile_calls(const std::string& path, const std::function<void()>& call);

}  // namespace jitc::bench
