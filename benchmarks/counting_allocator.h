// A CPU allocator that forwards to the one it replaces and counts live and peak bytes, so that
// bench_workloads can report the memory one call needs. Buffers that libraries take from their own
// pools (oneDNN scratchpads, BLAS workspaces) bypass it and are not counted.
#pragma once
#include <c10/core/Allocator.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace jitc::bench {

class CountingAllocator final : public c10::Allocator {
 public:
  // Installs itself as the CPU allocator (above the default's priority) for the rest of the process.
  static CountingAllocator& install();

  c10::DataPtr allocate(size_t n) override;
  c10::DeleterFnPtr raw_deleter() const override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  int64_t live_bytes() const;
  int64_t peak_bytes() const;
  void reset_peak();  // peak = live

 private:
  struct Block {
    int64_t bytes;
    void* context;  // the previous allocator's, freed with its deleter
    c10::DeleterFnPtr deleter;
  };
  explicit CountingAllocator(c10::Allocator* previous) : previous_(previous) {}
  static void free_block(void* data);

  c10::Allocator* previous_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;
  int64_t live_ = 0, peak_ = 0;
};

}  // namespace jitc::bench
