// Reads the thread-local state guards compare (grad mode, autocast and its dtypes, default dtype).
#pragma once
#include "guards/guard_set.h"

namespace jitc::runtime {

guards::GlobalState capture_global_state();

}  // namespace jitc::runtime
