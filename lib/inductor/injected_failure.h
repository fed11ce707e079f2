// Failures injected to test the eager fallback, as Inductor's inject_relu_bug_TESTING_ONLY does:
//
//   JITC_INJECT_FAILURE_TESTING_ONLY=<stage>:<op>     stage: lowering, codegen or compile
//
// makes that stage fail for the graphs where `op` (aten::relu, or with its overload) is computed by a
// kernel: lowering throws from the op's lowering, codegen from its kernel's code generator, and compile
// hands LLVM an invalid line in its kernel's function. Read at each compile, never on a call. Those
// three are limitations even under JITC_STRICT (they test the fallback); stage `bug` fails an internal
// assertion in the op's lowering, a bug that JITC_STRICT=1 lets through to the caller.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace jitc::inductor {

// True when the variable names `stage` and one of `ops` (full names; "aten::relu" matches "aten::relu.default").
bool failure_injected(std::string_view stage, const std::vector<std::string>& ops);
bool failure_injection_configured();  // the variable is set (JITC_STRICT lets the failures it injects fall back)

inline constexpr const char* kInjectedFailure = "failure injected by JITC_INJECT_FAILURE_TESTING_ONLY";

}  // namespace jitc::inductor
