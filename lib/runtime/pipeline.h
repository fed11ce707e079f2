// The pipeline from a traced graph to a loaded program, as one list of stages (pipeline.cpp).
#pragma once
#include "graph/graph.h"
#include "runtime/compile_times.h"
#include "runtime/entry.h"
#include "runtime/program.h"
#include "runtime/program_cache.h"

#include <memory>
#include <optional>
#include <string>

namespace jitc::runtime {

struct PipelineRequest {
  const Entry* entry = nullptr;  // its graph, as traced (and the two traces a symbolic graph came from)
  std::string name;              // the program's: "<function>_<compile number>"
  std::string compile_id;        // for log lines
  bool want_assembly = false;    // JITC_DEBUG_DIR: compile even on a cache hit, keep the assembly
  bool autotune = false;         // mode=max-autotune: time candidate schedules (needs the entry's sizes)
};

struct PipelineResult {
  graph::Graph graph;  // the functional graph the program runs
  std::shared_ptr<const ProgramCode> code;
  CodeSource source = CodeSource::kCompiled;
};

// Thrown by run_pipeline when the entry was superseded (Entry::superseded) before its kernels were
// scheduled or compiled: nothing failed, and nothing is reported.
struct BuildSuperseded {};

// Runs every stage; `times` receives each stage's time. Throws what a stage throws (UnsupportedError,
// CompileError, InternalError): the caller turns it into an eager fallback; BuildSuperseded where the
// entry was superseded between stages.
PipelineResult run_pipeline(const PipelineRequest& request, CompileTimes& times);

}  // namespace jitc::runtime
