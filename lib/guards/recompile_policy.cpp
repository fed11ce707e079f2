#include "guards/recompile_policy.h"

namespace jitc::guards {

uint64_t DimHistory::observe(size_t leaf, c10::IntArrayRef sizes) {
  if (leaf >= first_.size()) resize(leaf + 1);
  auto& first = first_[leaf];
  if (first.empty()) first.assign(sizes.begin(), sizes.end());
  if (first.size() != sizes.size()) return 0;  // a rank change is a new entry, never a symbol
  uint64_t fresh = 0;
  for (size_t d = 0; d < sizes.size() && d < 64; ++d)
    if (first[d] != sizes[d] && !(changed_[leaf] >> d & 1)) fresh |= 1ull << d;
  changed_[leaf] |= fresh;
  return fresh;
}

void DimHistory::resize(size_t leaves) {
  if (leaves == first_.size()) return;
  first_.assign(leaves, {});
  changed_.assign(leaves, 0);
}

void DimHistory::clear() {
  first_.clear();
  changed_.clear();
}

}  // namespace jitc::guards
