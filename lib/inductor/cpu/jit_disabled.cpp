// Built instead of jit.cpp when JITC_WITH_LLVM=OFF: the CPU code generator reports that it is
// absent, and backend=inductor falls back to the eager backend for CPU graphs (one warning per graph).
#include "inductor/cpu/jit.h"

#include <jitc/errors.h>

namespace jitc::inductor::cpu {

std::unique_ptr<CpuModule> compile_cpu_module(const std::string&, const std::string& name, bool) {
  throw UnsupportedError("jitc was built without LLVM (JITC_WITH_LLVM=OFF): no CPU code generator for " + name);
}

CpuObject compile_cpu_object(const std::string&, const std::string& name, bool) {
  throw UnsupportedError("jitc was built without LLVM (JITC_WITH_LLVM=OFF): no CPU code generator for " + name);
}

std::unique_ptr<CpuModule> load_cpu_objects(const std::vector<std::string>&, const std::string& name) {
  throw UnsupportedError("jitc was built without LLVM (JITC_WITH_LLVM=OFF): cannot load the CPU code of " + name);
}

bool cpu_jit_available() { return false; }
std::string cpu_target_description() { return "none (built without LLVM)"; }
std::string cpu_codegen_identity() { return "none"; }

}  // namespace jitc::inductor::cpu
