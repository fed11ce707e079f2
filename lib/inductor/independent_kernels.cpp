#include "inductor/independent_kernels.h"

#include <algorithm>
#include <set>

namespace jitc::inductor {

namespace {

// The storages a kernel reads or writes, and those it writes (its outputs, and the inputs whose memory
// they are stored in).
struct Footprint {
  std::set<int32_t> touched, written;
};

Footprint footprint(const KernelLaunch& launch, const graph::Graph& g) {
  Footprint f;
  for (graph::ValueId v : launch.buffers) f.touched.insert(g.values[v].storage);
  for (graph::ValueId v : launch.outputs) f.written.insert(g.values[v].storage);
  for (graph::ValueId v : launch.output_memory)
    if (v != graph::kNoValue) f.written.insert(g.values[v].storage);
  f.touched.insert(f.written.begin(), f.written.end());
  return f;
}

bool meets(const std::set<int32_t>& a, const std::set<int32_t>& b) {
  return std::any_of(a.begin(), a.end(), [&](int32_t s) { return b.count(s) > 0; });
}

bool independent(const Footprint& a, const Footprint& b) { return !meets(a.written, b.touched) && !meets(b.written, a.touched); }

class Runs {
 public:
  void add(size_t kernel, Footprint f) {
    const bool fits = std::all_of(footprints_.begin(), footprints_.end(), [&](const Footprint& m) { return independent(m, f); });
    if (!fits) close();
    current_.push_back(kernel);
    footprints_.push_back(std::move(f));
  }

  void close() {
    if (current_.size() >= 2) runs_.push_back(current_);
    current_.clear();
    footprints_.clear();
  }

  std::vector<std::vector<size_t>> take() {
    close();
    return std::move(runs_);
  }

 private:
  std::vector<size_t> current_;
  std::vector<Footprint> footprints_;
  std::vector<std::vector<size_t>> runs_;
};

}  // namespace

std::vector<std::vector<size_t>> independent_kernel_runs(const Plan& plan, const graph::Graph& g) {
  Runs runs;
  for (const Step& step : plan.steps) {
    if (step.kind == Step::Kind::kRelease) continue;
    const bool candidate = step.kind == Step::Kind::kKernel && !has_checks(plan.kernels[step.index].kernel);
    if (!candidate) {
      runs.close();
      continue;
    }
    runs.add(static_cast<size_t>(step.index), footprint(plan.kernels[step.index], g));
  }
  return runs.take();
}

}  // namespace jitc::inductor
