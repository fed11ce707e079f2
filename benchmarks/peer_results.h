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

// peer_torch_compile.py --device cuda: torch.compile on bench_cuda's workloads, per mode ("default",
// "reduce-overhead", "reduce-overhead-static-inputs").
struct CudaPeerMode {
  double ms = 0;              // per call, bench_cuda's estimator
  double first_calls_s = 0;   // the first three calls and a synchronize
  double peak_bytes = 0;      // over one steady-state call, less what was allocated before it
  double held_bytes = 0;      // memory_reserved growth over compile and warm-up (the CUDA-graph pool)
  double max_abs_diff = 0;    // vs eager
  bool match = true;
  double cudagraph_skips = 0; // Inductor ran this mode without CUDA graphs
  std::string error;          // set when torch.compile failed in this mode
};

struct CudaPeerWorkload {
  std::string name;
  int calls = 0;  // per timing round: bench_cuda checks it uses the same
  double eager_ms = 0, peak_bytes_eager = 0;
  std::map<std::string, CudaPeerMode> modes;
};

struct CudaPeerRun {
  std::string device;   // "cuda"; "cpu" for a --debug-cpu file (a test of the script, not a measurement)
  std::string machine;  // GPU, torch and triton versions
  double copy_gbs = 0;
  std::map<std::string, double> host_us;  // "eager" (Python) and per mode
  std::map<std::string, CudaPeerWorkload> workloads;  // by key
};

CudaPeerRun read_cuda_peer_results(const std::string& path);

}  // namespace jitc::bench
