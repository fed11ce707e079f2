// What bench_workloads measured, and its two outputs: the markdown table and the JSON file.
#pragma once
#include "peer_results.h"
#include "workloads.h"

#include <jitc/stats.h>

#include <optional>
#include <string>
#include <vector>

namespace jitc::bench {

struct Machine {
  std::string cpu;  // model name from /proc/cpuinfo
  std::string last_level_cache;  // its size, from sysfs
  int threads = 0;  // at::get_num_threads()
  double copy_bytes_per_s = 0;  // a 64 MiB copy_: bytes read + written per second
  // /proc/loadavg's 1-minute figure at the start: near or above `threads`, another process (a build) shared
  // the cores, and multi-threaded times quantize to scheduler slices.
  double load_average = 0;
  std::string compile_cache;  // "fresh (cold compiles)" or the caller's JITC_CACHE_DIR
  double startup_compile_s = 0;  // first call of a trivial compiled function, before the workloads
};

struct Row {
  const Workload* workload = nullptr;
  double eager_s = 0, jitc_s = 0;  // per call, median
  double same_size_copy_s = 0;     // a copy_ moving the workload's minimal bytes
  double first_call_s = 0;         // jitc's first call: trace and compile included
  int64_t eager_peak_bytes = 0, jitc_peak_bytes = 0;  // allocated during one call, result included
  bool match = false;
  double max_abs_diff = 0;
  double eager_checksum = 0;  // sum |eager result| in float64: the peer's must agree (same workload)
  jitc::Stats stats;
  double other_cores = 0;  // cores other processes used meanwhile (ContentionMeter)
  std::string error;  // jitc threw: the other fields of jitc are unset
};

void print_table(const Machine& machine, const std::vector<Row>& rows, const std::optional<PeerRun>& peer);
// Throws std::runtime_error when the file cannot be written.
void write_json(const std::string& path, const Machine& machine, const std::vector<Row>& rows,
                const std::optional<PeerRun>& peer);

}  // namespace jitc::bench
