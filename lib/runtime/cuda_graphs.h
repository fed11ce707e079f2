// mode=reduce-overhead: an entry's program captured into a CUDA graph and replayed, so that a call costs
// one graph launch instead of a launch (and an allocation) per kernel, as torch.compile's cudagraph trees.
//
// A graph reads its inputs and writes its outputs at fixed addresses. jitc guards the addresses instead
// of copying inputs into static buffers: a recording is keyed by the data pointers of every tensor the
// program reads (and the symbol values), so a serving loop that reuses its input buffers replays without
// a copy, and writes into inputs (in-place ops) land in the caller's tensors. Each new key runs once
// normally (warm-up: lazy initializations cannot happen during a capture), is captured on its second
// call and replayed from then on. Up to kMaxRecordings keys per program; calls with other keys run
// without a graph.
//
// Outputs live in the graph's memory and are overwritten by its next replay. torch.compile raises when
// an overwritten output is read; jitc instead hands out outputs in storages of their own, and before the
// next replay copies any output the caller still holds into fresh memory, swapped into that storage: a
// kept result never changes. Outputs dropped before the next call cost nothing.
//
// Skipped (one perf_hints line, the program then runs normally): CPU tensors or kernels, graph-break
// checks (they read values on the host), outputs that alias inputs, and captures that fail (an op that
// synchronizes, for instance).
#pragma once
#include <ATen/core/Tensor.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace jitc::runtime {

class Program;

struct CudaGraphCounters {
  std::atomic<int64_t> captures{0}, replays{0};
};

class CudaGraphs {
 public:
  static constexpr size_t kMaxRecordings = 8;
  using Log = std::function<void(const std::string&)>;

  // `log` receives the one line that says why graphs are skipped; `counters` (shared by a compiled
  // function's entries) count captures and replays.
  CudaGraphs(const Program& program, Log log, CudaGraphCounters* counters);
  ~CudaGraphs();

  // Runs the program through a graph: true with the outputs in `values`; false when it ran nothing (the
  // caller runs the program itself). Throws what the program throws.
  bool run(std::vector<at::Tensor>& values, const int64_t* symbols);

 private:
  struct Recording;
  using Key = std::vector<int64_t>;

  std::string why_not(const std::vector<at::Tensor>& values) const;
  Key key_of(const std::vector<at::Tensor>& values, const int64_t* symbols) const;
  bool capture(Recording& r, const std::vector<at::Tensor>& values, const int64_t* symbols);
  void replay(const std::shared_ptr<Recording>& r, std::vector<at::Tensor>& values);
  void skip(const std::string& why);

  const Program& program_;
  Log log_;
  mutable std::mutex mutex_;  // one replay at a time: a program's recordings share their outputs
  std::string skipped_;       // why graphs are off for this program
  bool checked_ = false;      // skipped_ was decided (on the first call)
  bool warned_full_ = false;
  std::map<Key, std::shared_ptr<Recording>> recordings_;
  CudaGraphCounters* counters_;
};

}  // namespace jitc::runtime
