#include "runtime/profiling.h"

#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

namespace jitc::runtime {

std::string compiled_region_name(const std::string& function, const std::string& compile_id) {
  return fmt::format("jitc-compiled region: {} [{}]", function, compile_id);
}

void NvtxRange::push(const char* name) { nvtxRangePushA(name); }
void NvtxRange::pop() { nvtxRangePop(); }

}  // namespace jitc::runtime
