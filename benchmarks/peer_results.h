// Reads the JSON that peer_torch_compile.py writes, so that bench_workloads can print torch.compile's
// times next to jitc's.
#pragma once
#include <map>
#include <string>

namespace jitc::bench {

struct PeerResult {
  double eager_us = 0;     // eager PyTorch from Python, per call
  double compiled_us = 0;  // torch.compile, per call
  double compile_s = 0;    // torch.compile's first call
  bool match = true;       // compiled result allclose to eager
  double eager_checksum = 0;  // sum |eager result| in float64, as bench_workloads computes it
  double other_cores = 0;  // cores other processes used while it was timed
  std::string error;       // set when torch.compile failed on this workload
};

struct PeerRun {
  std::string machine;  // the peer run's CPU and threads, to spot a comparison across machines
  std::map<std::string, PeerResult> workloads;
};

// Throws std::runtime_error naming the file and the byte offset of a syntax error.
PeerRun read_peer_results(const std::string& path);

}  // namespace jitc::bench
