#include "inductor/cpu/launch.h"

#include "runtime/thread_pool.h"

#include <c10/util/SmallVector.h>

#include <algorithm>
#include <atomic>

namespace jitc::inductor::cpu {

namespace {

constexpr int64_t kGrainElements = 32768;  // elements of work per parallel chunk (Inductor: 4096+ per thread)

}  // namespace

bool run_cpu_function(const CpuFunction& f, const LaunchArgs& args) {
  const int64_t tiles = f.tiles(args.symbols);
  if (tiles <= 0) return true;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, args.largest_buffer / tiles));
  std::atomic<int32_t> status{0};
  c10::SmallVector<void*, 16> with_status;
  if (f.checks) {
    with_status.assign(args.buffers, args.buffers + args.num_buffers);
    with_status.push_back(&status);
  }
  void* const* pointers = f.checks ? with_status.data() : args.buffers;
  const int64_t* symbols = args.symbols;
  runtime::parallel_for(tiles, grain, [&](int64_t begin, int64_t end) { f.run(pointers, symbols, begin, end); });
  return status.load(std::memory_order_relaxed) == 0;
}

}  // namespace jitc::inductor::cpu
