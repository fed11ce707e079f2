#include "counting_allocator.h"

#include <c10/core/CPUAllocator.h>

namespace jitc::bench {
namespace {
CountingAllocator* g_instance = nullptr;
// SetCPUAllocator replaces an allocator only at the same or a higher priority; the default is 0.
constexpr uint8_t kPriority = 100;
}  // namespace

CountingAllocator& CountingAllocator::install() {
  if (!g_instance) {
    g_instance = new CountingAllocator(c10::GetCPUAllocator());  // lives as long as the tensors it made
    c10::SetCPUAllocator(g_instance, kPriority);
  }
  return *g_instance;
}

// The DataPtr keeps context == data (is_simple_data_ptr and raw_allocate rely on it); the previous
// allocator's own context and deleter wait in blocks_ until the buffer is freed.
c10::DataPtr CountingAllocator::allocate(size_t n) {
  c10::DataPtr inner = previous_->allocate(n);
  void* data = inner.get();
  if (!data) return inner;
  const c10::Device device = inner.device();
  const c10::DeleterFnPtr deleter = inner.get_deleter();
  void* context = inner.release_context();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_[data] = {static_cast<int64_t>(n), context, deleter};
    live_ += static_cast<int64_t>(n);
    if (live_ > peak_) peak_ = live_;
  }
  return {data, data, &CountingAllocator::free_block, device};
}

// Empty allocations come back as null and were never recorded; raw_deallocate still hands them here.
void CountingAllocator::free_block(void* data) {
  if (!data) return;
  Block block;
  {
    std::lock_guard<std::mutex> lock(g_instance->mutex_);
    auto it = g_instance->blocks_.find(data);
    block = it->second;
    g_instance->blocks_.erase(it);
    g_instance->live_ -= block.bytes;
  }
  if (block.deleter) block.deleter(block.context);
}

c10::DeleterFnPtr CountingAllocator::raw_deleter() const { return &CountingAllocator::free_block; }

void CountingAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  previous_->copy_data(dest, src, count);
}

int64_t CountingAllocator::live_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_;
}

int64_t CountingAllocator::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}

void CountingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_ = live_;
}

}  // namespace jitc::bench
