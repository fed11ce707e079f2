// Logging with TORCH_LOGS's grammar and Dynamo's line prefix, driven by JITC_LOGS:
//   JITC_LOGS=recompiles,graph_breaks ./app
//   V1121 16:43:08.805986 34281 runtime/engine.cpp:210] [0/1] [__recompiles] Recompiling function ...
// Warnings (recompile limit, eager fallbacks) are always printed, as Dynamo's log.warning is, and so
// are INFO lines (a compile that takes long).
#pragma once
#include <functional>
#include <source_location>
#include <string>
#include <string_view>

namespace jitc::runtime {

enum class Artifact {
  kRecompiles,
  kRecompilesVerbose,
  kGraphBreaks,
  kGuards,
  kDynamic,
  kGraphCode,
  kOutputCode,
  kPerfHints,
  kFusion,
  kSchedule,
  kCache,
  kCompileTimes,
  kPasses,     // the graph after each pipeline stage that changed it (pipeline.cpp)
  kAotGraphs,  // a training entry's forward and backward graphs and what the forward saves
  kDebug,      // +jitc
  kCount
};

bool log_enabled(Artifact artifact);

void log(Artifact artifact, std::string_view message, std::string_view compile_id = {},
         std::source_location where = std::source_location::current());
void warn(std::string_view message, std::string_view compile_id = {}, std::source_location where = std::source_location::current());
// Always printed, at INFO level: news a user waits on (a long compile), not a problem.
void info(std::string_view message, std::string_view compile_id = {}, std::source_location where = std::source_location::current());

// Replaces the settings from JITC_LOGS (tests). Unknown names print one warning and are ignored.
void set_logs(std::string_view spec);
// Sends every log line to `sink` instead of stderr (tests); an empty function restores stderr.
void set_log_sink(std::function<void(const std::string&)> sink);

}  // namespace jitc::runtime
