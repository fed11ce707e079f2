// Where a program's compile time went, stage by stage: one JITC_LOGS=compile_times line per program and
// Stats::codegen_stages. A steady_clock read at each end of a stage, a handful per compile; nothing
// on the call path.
#pragma once
#include <jitc/stats.h>

#include <chrono>
#include <string>

namespace jitc::runtime {

struct CompileTimes {
  double trace = 0;      // tracing the call that made the entry, and building the entry (guards included)
  CodegenStages stages;  // building the entry's program
};

// "trace 3.1 ms, passes 0.4 ms, ..." in stage order; stages that did not run (zero) are left out.
std::string describe(const CompileTimes& times);
// Adds each stage of `from` to `to`.
void add(CodegenStages& to, const CodegenStages& from);

// Adds the seconds from its construction to its destruction to one stage of `times` (nothing if null).
class StageTimer {
 public:
  StageTimer(CompileTimes* times, double CodegenStages::*stage)
      : slot_(times ? &(times->stages.*stage) : nullptr), start_(std::chrono::steady_clock::now()) {}
  ~StageTimer() {
    if (slot_) *slot_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  double* slot_;
  std::chrono::steady_clock::time_point start_;
};

// f(), its time added to `stage` of `times`.
template <class F>
auto timed(CompileTimes* times, double CodegenStages::*stage, F&& f) {
  StageTimer timer(times, stage);
  return f();
}

}  // namespace jitc::runtime
