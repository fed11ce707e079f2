// Counters of one compiled function (f.stats()) and the report of jitc::explain.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace jitc {

// Of Stats::codegen_seconds, stage by stage, summed over a function's programs (JITC_LOGS=compile_times
// prints each program's, with its trace). Stages a program skips stay 0: a cache hit only loads.
struct CodegenStages {
  double passes = 0;          // functionalization, DCE and CSE of the entry's graph
  double lower_schedule = 0;  // lowering to kernel IR and fusion (cache misses)
  double codegen = 0;         // printing the kernels as LLVM IR and CUDA C
  double llvm = 0;            // CPU kernels: LLVM O3 and object code
  double nvrtc = 0;           // CUDA kernels: NVRTC
  double load = 0;            // loading compiled code into the process (object code, CUDA modules), or cached code
  double autotune = 0;        // mode=max-autotune: timing each kernel's candidate configurations
};

struct Stats {
  int64_t calls = 0;
  int64_t hits = 0;         // calls served by a compiled entry
  int64_t compiles = 0;     // traces that produced an entry (the first one included)
  int64_t recompiles = 0;   // compiles after the first
  int64_t size_checks = 0;  // traces that confirmed a symbolic entry for new sizes (no new entry)
  // The first hit of an entry that updates captured tensors in place (an optimizer step, running
  // statistics) traces the call again: the entry stays only if the graph is the same, so that a C++ value
  // the trace read and the guards cannot see (an optimizer's step count) is not frozen into it.
  int64_t first_hit_checks = 0;
  // Every call is exactly one of: a hit, a compile, a size check, a first-hit check, or an eager fallback.
  int64_t eager_fallbacks = 0;                 // calls that ran the callable eagerly
  int64_t graph_breaks = 0;                    // breaks seen while tracing
  int64_t entries = 0;                         // live cache entries
  double compile_seconds = 0;                  // time spent tracing and compiling (code generation included)
  int64_t programs_compiled = 0;               // graphs turned into compiled programs (backend inductor)
  int64_t kernels_compiled = 0;                // fused kernels generated and compiled for them (cache hits excluded)
  int64_t programs_from_cache = 0;             // programs whose code came from the compile cache (memory or disk)
  double codegen_seconds = 0;                  // of compile_seconds: lowering, scheduling, LLVM, or loading cached code
  CodegenStages codegen_stages;                // of codegen_seconds, by stage
  int64_t cudagraph_captures = 0;              // mode=reduce-overhead: programs captured into CUDA graphs
  int64_t cudagraph_replays = 0;               // calls served by replaying one
  std::vector<std::string> recompile_reasons;  // one per recompile, Dynamo's text
};

struct GraphBreak {
  std::string op;      // e.g. aten::_local_scalar_dense
  std::string reason;  // e.g. "Data dependent operator"
};

struct ExplainOutput {
  int64_t graph_count = 0;
  int64_t graph_break_count = 0;
  int64_t op_count = 0;
  std::vector<GraphBreak> break_reasons;
  std::vector<std::vector<std::string>> ops_per_graph;
  std::vector<std::string> guards;
  double compile_seconds = 0;
  std::string to_string() const;  // torch._dynamo.explain's layout
};

}  // namespace jitc
