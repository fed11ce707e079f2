// Parallel loops for compiled CPU kernels. ATen's at::parallel_for is a header template that, in the
// OpenMP build of the LibTorch wheel, only runs in parallel in code compiled with -fopenmp; libjitc is not
// (a second OpenMP runtime next to the wheel's own libgomp is asking for trouble). Kernels run on the
// OpenMP runtime LibTorch already loaded, called through its entry point GOMP_parallel (the same thread
// team as ATen's ops), or, where LibTorch has none, on a small pool of jitc's own: at::get_num_threads()
// threads in all (the caller included), chunks handed out through an atomic counter, a nested call inline.
#pragma once
#include <cstdint>
#include <functional>

namespace jitc::runtime {

// Runs fn(begin, end) over [0, n) in chunks of at least `grain`, and returns when all are done. The first
// exception thrown by fn is rethrown here.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace jitc::runtime
