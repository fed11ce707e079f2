// The registry behind jitc::mark_dynamic / maybe_mark_dynamic / mark_static. torch keeps these marks as
// attributes on the Python tensor; a C++ tensor has no such slot, so they live here, keyed by the
// TensorImpl and dropped when it is freed.
#pragma once
#include <c10/core/TensorImpl.h>

#include <cstdint>
#include <limits>

namespace jitc::runtime {

struct DimRange {
  int64_t min = 2;
  int64_t max = std::numeric_limits<int64_t>::max();
};

struct TensorMarks {
  uint64_t dynamic = 0;  // mark_dynamic or maybe_mark_dynamic (bit d = dim d)
  uint64_t stat = 0;     // mark_static
  DimRange ranges[8];    // mark_dynamic's min/max for dims 0..7
};

// True once any tensor was ever marked: until then calls skip the registry entirely.
bool any_marks();
TensorMarks marks_of(const c10::TensorImpl* impl);

}  // namespace jitc::runtime
