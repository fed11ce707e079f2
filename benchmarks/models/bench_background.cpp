// Calls while a program builds in the background (issue 25: no call stalls on code generation, none
// more than 2x eager's time while compiling), per model of the suite on the CPU: eager's median call,
// then a compiled function with Options::compile_in_background: its first call (the trace), every call
// until the program is ready (eager replay, the build on a thread of its own), the slowest of them
// against eager's median, the slowest of as many eager calls (the machine's own outliers), and the
// seconds from the first call until compiled code runs.
//   OMP_NUM_THREADS=2 ./build/benchmarks/bench_background [--only a,b]
#include "bench_timing.h"
#include "models.h"

#include <jitc/jitc.h>

#include <c10/core/InferenceMode.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

void measure(const jitc::bench::Model& model) {
  const at::Tensor x = model.make_input();
  std::vector<double> eager;
  for (int k = 0; k < 7; ++k) eager.push_back(jitc::bench::seconds_of([&] { model.forward(x); }));
  const double eager_ms = jitc::bench::median(eager) * 1e3;
  jitc::Options options;
  options.compile_in_background = true;
  auto compiled = jitc::compile(model.forward, options);
  const auto start = std::chrono::steady_clock::now();
  const double trace_ms = jitc::bench::seconds_of([&] { compiled(x); }) * 1e3;
  std::vector<double> building;
  while (compiled.stats().programs_compiled == 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(300))
    building.push_back(jitc::bench::seconds_of([&] { compiled(x); }) * 1e3);
  const double ready_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double compiled_ms = jitc::bench::seconds_of([&] { compiled(x); }) * 1e3;
  const double slowest = building.empty() ? 0 : *std::max_element(building.begin(), building.end());
  // As many eager calls, back to back: this machine's own outliers, next to those of the calls while building.
  double slowest_eager = 0;
  for (size_t k = 0; k < building.size(); ++k) slowest_eager = std::max(slowest_eager, jitc::bench::seconds_of([&] { model.forward(x); }) * 1e3);
  fmt::print("| {} | {:.2f} | {:.1f} | {} | {:.2f} | {:.2f}x | {:.2f} | {:.2f} | {:.2f} |\n", model.name, eager_ms, trace_ms, building.size(),
             slowest, slowest / eager_ms, slowest_eager, ready_s, compiled_ms);
}

}  // namespace

int main(int argc, char** argv) {
  setenv("JITC_COMPILE_IN_BACKGROUND", "1", /*overwrite=*/1);
  std::vector<std::string> only;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--only") only = split_commas(argv[++i]);
  // Built before inference mode, as bench_models builds them.
  const std::vector<jitc::bench::Model> models = jitc::bench::make_models(jitc::bench::ModelScale::kBenchmark, c10::kCPU);
  c10::InferenceMode inference;
  fmt::print(
      "| model | eager ms | first call (trace) ms | calls while building | slowest of them ms | slowest / eager | slowest of as many eager "
      "calls ms | compiled code from s | compiled call ms |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& model : models)
    if (only.empty() || std::find(only.begin(), only.end(), model.name) != only.end()) measure(model);
}
