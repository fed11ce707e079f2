// The recompile manager's policy for dynamic shapes (Dynamo's automatic dynamic): which dims of which
// argument the next trace may make symbolic.
#pragma once
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace jitc::guards {

// The sizes first seen per argument leaf, and the dims that have changed since.
class DimHistory {
 public:
  // Records the sizes of a call's leaf; returns the dims that changed for the first time.
  uint64_t observe(size_t leaf, c10::IntArrayRef sizes);
  uint64_t changed(size_t leaf) const { return leaf < changed_.size() ? changed_[leaf] : 0; }
  int64_t first_size(size_t leaf, size_t dim) const { return first_[leaf][dim]; }
  // A call with another number of leaves (a list of another length) starts a new history.
  void resize(size_t leaves);
  void clear();

 private:
  std::vector<std::vector<int64_t>> first_;
  std::vector<uint64_t> changed_;
};

// Dims that may become symbolic: the changed ones unless dynamic=false, minus mark_static, plus
// mark_dynamic (which outranks mark_static, as in torch._dynamo).
inline uint64_t dynamic_dims(uint64_t changed, std::optional<bool> dynamic, uint64_t marked, uint64_t pinned) {
  return ((dynamic.value_or(true) ? changed : 0) & ~pinned) | marked;
}

}  // namespace jitc::guards
