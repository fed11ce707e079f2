// CpuJit: compiles LLVM IR text in-process with ORC LLJIT, optimized at O3 for the host CPU and its
// features, and hands back function addresses. Code generators print IR text; only this file's .cpp
// sees LLVM. Each compiled module has a JITDylib of its own, removed with it: a program is dropped whole.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace jitc::inductor::cpu {

class CpuModule {
 public:
  virtual ~CpuModule() = default;
  virtual void* symbol(const std::string& name) const = 0;  // throws CompileError if it cannot be linked
  virtual const std::string& optimized_ir() const = 0;      // after O3, for JITC_LOGS=output_code and tests
  virtual const std::string& assembly() const = 0;          // empty unless requested (JITC_DEBUG_DIR)
  virtual const std::string& object() const = 0;            // the relocatable object code (the disk cache)
};

// Throws jitc::CompileError with LLVM's message and the function at fault when the IR does not parse or
// verify, or LLVM's message when compiling fails.
std::unique_ptr<CpuModule> compile_cpu_module(const std::string& ir_text, const std::string& name, bool want_assembly = false);

// compile_cpu_module's two halves: the optimized IR compiled to object code (with the optimized IR and,
// if wanted, the assembly, for people), and that object code loaded. Modules compile on several
// threads at once (each compile has a TargetMachine of its own).
struct CpuObject {
  std::string object, optimized_ir, assembly;
};
CpuObject compile_cpu_object(const std::string& ir_text, const std::string& name, bool want_assembly = false);

// Loads object code that compile_cpu_object made (in this or an earlier process) without compiling:
// the objects of one program, each defining some of its functions (symbol() finds each in its object).
std::unique_ptr<CpuModule> load_cpu_objects(const std::vector<std::string>& objects, const std::string& name);

// False in a build without LLVM (JITC_WITH_LLVM=OFF).
bool cpu_jit_available();

// The host target as the kernels are compiled for it: triple, CPU name and features (cache keys).
std::string cpu_target_description();
// Everything the object code depends on besides the IR: LLVM's version, the target, the vector library.
std::string cpu_codegen_identity();

}  // namespace jitc::inductor::cpu
