// The model suite (issue 25) on the CPU: eager vs jitc per model of models.h, in one run, under
// c10::InferenceMode and LibTorch's thread count (set OMP_NUM_THREADS / at::set_num_threads by the caller):
//   eager / jitc ms   per call: two warm-up calls each, then rounds in which eager and jitc take turns (the
//                     order reversed every other round), median over the rounds
//   first calls s     jitc's first two calls (the first traces and runs eagerly, the second generates code
//                     and runs it) with a fresh JITC_CACHE_DIR (cold compiles); compile s: of that, the
//                     time spent tracing and generating code (stats().compile_seconds)
//   max abs, rel L2   jitc's result against eager's on the same input, after the first call (a replay)
//   peak MiB          bytes allocated during one call beyond what was live before it, eager and jitc (the
//                     CPU allocator, counted; on CUDA the caching allocator's peak statistic)
//   kernels, fallback the kernels jitc compiled and whether any call ran eagerly
// torch.compile's columns come from peer_models.py's JSON (--peer). Prints a markdown table, writes JSON.
//
// --profile DIR writes DIR/<model>_{eager,jitc}.trace (LibTorch's kineto profiler, chrome://tracing format)
// of three calls each after the timing: ATen ops, jitc's compiled regions, and on the GPU every kernel with
// its device time; benchmarks/models/trace_summary.py sums them by name (peer_profile.py traces
// torch.compile's calls the same way).
// --mode sets jitc's mode (default, reduce-overhead, max-autotune), as --mode of peer_models.py sets
// torch.compile's. --device cuda times on the GPU (a synchronize closes each timed call), --dtype bf16|half|float sets the
// weights' and inputs' dtype (float by default).
// Usage, from the repository root (threads: 2 on the developer machine, as the peer's torch.set_num_threads):
//   ~/.cache/jitc-setup/venv/bin/python benchmarks/models/peer_models.py benchmarks/models/peer_cpu.json
//   ./build/benchmarks/bench_models benchmarks/models/models_cpu.json --peer benchmarks/models/peer_cpu.json [--only a,b] [--rounds N]
#include "bench_flags.h"
#include "counting_allocator.h"
#include "models/bench_timing.h"
#include "models/models.h"
#include "peer_results.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace jitc::bench {
namespace {

struct Args {
  std::string out = "benchmarks/models/models_cpu.json", peer;
  std::vector<std::string> only;
  int rounds = 7;
  c10::Device device = c10::kCPU;
  c10::ScalarType dtype = c10::kFloat;
  jitc::Options options;    // --mode
  std::string profile_dir;  // --profile: one eager and one jitc call per model, as chrome traces
};

c10::ScalarType dtype_named(const std::string& name) {
  if (name == "bf16" || name == "bfloat16") return c10::kBFloat16;
  if (name == "half" || name == "fp16") return c10::kHalf;
  if (name == "float" || name == "fp32") return c10::kFloat;
  throw std::runtime_error("unknown --dtype " + name + " (bf16, half or float)");
}

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--peer" && i + 1 < argc) {
      args.peer = argv[++i];
    } else if (arg == "--device" && i + 1 < argc) {
      args.device = c10::Device(argv[++i]);
    } else if (arg == "--profile" && i + 1 < argc) {
      args.profile_dir = argv[++i];
    } else if (arg == "--mode" && i + 1 < argc) {
      args.options.mode = mode_named(argv[++i]);
    } else if (arg == "--dtype" && i + 1 < argc) {
      args.dtype = dtype_named(argv[++i]);
    } else if (arg == "--rounds" && i + 1 < argc) {
      args.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--only" && i + 1 < argc) {
      args.only = split_commas(argv[++i]);
    } else if (arg.rfind("--", 0) == 0) {
      throw std::runtime_error("unknown flag " + arg +
                               "; usage: bench_models [out.json] [--peer peer.json] [--only a,b] [--rounds N] [--device cuda] [--dtype "
                               "bf16] [--mode reduce-overhead] [--profile dir]");
    } else {
      args.out = arg;
    }
  }
  return args;
}

struct Row {
  std::string name, shapes;
  double eager_ms = 0, jitc_ms = 0, first_call_s = 0, compile_s = 0, max_abs = 0, rel_l2 = 0;
  double eager_peak_mib = 0, jitc_peak_mib = 0;
  int64_t kernels = 0, fallbacks = 0, graphs = 0;
  std::string error;
};

Row measure(const Model& model, const Args& args, CountingAllocator& allocator) {
  Row row{model.name, model.shapes};
  const at::Tensor x = model.make_input();
  auto compiled = jitc::compile(model.forward, args.options);
  row.first_call_s = seconds_of([&] { compiled(x), compiled(x); });
  row.compile_s = compiled.stats().compile_seconds;
  const at::Tensor expected = results_from_start(model, model.forward, x);
  const at::Tensor got = results_from_start(
      model, [&](const at::Tensor& input) { return compiled(input); }, x);
  const at::Tensor diff = (got.to(at::kDouble) - expected.to(at::kDouble)).cpu();
  row.max_abs = diff.abs().max().item<double>();
  row.rel_l2 = (diff.norm() / expected.to(at::kDouble).cpu().norm().clamp_min(1e-300)).item<double>();
  std::vector<double> eager, jitc;
  for (int warm = 0; warm < 2; ++warm) model.forward(x), compiled(x);
  for (int r = 0; r < args.rounds; ++r) {
    auto time_eager = [&] { eager.push_back(seconds_of([&] { model.forward(x); })); };
    auto time_jitc = [&] { jitc.push_back(seconds_of([&] { compiled(x); })); };
    if (r % 2 == 0) time_eager(), time_jitc();
    else time_jitc(), time_eager();
  }
  row.eager_ms = median(eager) * 1e3;
  row.jitc_ms = median(jitc) * 1e3;
  row.eager_peak_mib = peak_mib_of(allocator, [&] { model.forward(x); });
  row.jitc_peak_mib = peak_mib_of(allocator, [&] { compiled(x); });
  if (!args.profile_dir.empty()) {
    std::filesystem::create_directories(args.profile_dir);
    profile_calls(args.profile_dir + "/" + model.name + "_eager.trace", [&] { model.forward(x); });
    profile_calls(args.profile_dir + "/" + model.name + "_jitc.trace", [&] { compiled(x); });
  }
  const auto stats = compiled.stats();
  row.kernels = stats.kernels_compiled;
  row.fallbacks = stats.eager_fallbacks;
  row.graphs = stats.programs_compiled;
  return row;
}

std::string json_of(const std::vector<Row>& rows, int threads) {
  std::string s = fmt::format("{{\n \"threads\": {},\n \"models\": [\n", threads);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    s += fmt::format(
        "  {{\"name\": \"{}\", \"eager_ms\": {}, \"jitc_ms\": {}, \"first_calls_s\": {}, \"compile_s\": {}, \"max_abs\": {}, \"rel_l2\": "
        "{}, "
        "\"eager_peak_mib\": {}, \"jitc_peak_mib\": {}, \"kernels\": {}, \"programs\": {}, \"eager_fallbacks\": {}, \"error\": "
        "\"{}\"}}{}\n",
        r.name, r.eager_ms, r.jitc_ms, r.first_call_s, r.compile_s, r.max_abs, r.rel_l2, r.eager_peak_mib, r.jitc_peak_mib, r.kernels,
        r.graphs, r.fallbacks, r.error, i + 1 < rows.size() ? "," : "");
  }
  return s + " ]\n}\n";
}

void print_table(const std::vector<Row>& rows, const PeerRun* peer) {
  fmt::print(
      "| model | eager ms | jitc ms | jitc/eager | torch.compile ms (its eager) | jitc vs torch.compile | first calls s (jitc / tc) | jitc "
      "compile s | max abs | rel L2 "
      "| peak MiB (eager / jitc) | kernels | programs |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      fmt::print("| {} | error: {} |\n", r.name, r.error);
      continue;
    }
    std::string tc = "-", vs = "-", tc_first = "-";
    if (peer && peer->workloads.count(r.name)) {
      const PeerResult& p = peer->workloads.at(r.name);
      if (p.error.empty()) {
        // Times of two processes on one machine, one after the other (> 1: jitc is faster). The eager
        // columns of both runs show how far the machine moved between them.
        tc = fmt::format("{:.2f} (eager {:.2f})", p.compiled_us / 1e3, p.eager_us / 1e3);
        vs = fmt::format("{:.2f}x", p.compiled_us / 1e3 / r.jitc_ms);
        tc_first = fmt::format("{:.1f}", p.compile_s);
      }
    }
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f}x | {} | {} | {:.1f} / {} | {:.1f} | {:.1e} | {:.1e} | {:.0f} / {:.0f} | {} | {} |\n",
               r.name, r.eager_ms, r.jitc_ms, r.eager_ms / r.jitc_ms, tc, vs, r.first_call_s, tc_first, r.compile_s, r.max_abs, r.rel_l2,
               r.eager_peak_mib, r.jitc_peak_mib, r.kernels, r.graphs);
  }
}

}  // namespace
}  // namespace jitc::bench

int main(int argc, char** argv) {
  // First calls are timed with their code generation (the background builds are off: issue 25 asks for
  // the opt-out where benchmarks time compiles); JITC_COMPILE_IN_BACKGROUND=1 in the environment wins.
  setenv("JITC_COMPILE_IN_BACKGROUND", "0", /*overwrite=*/0);
  using namespace jitc::bench;
  try {
    const Args args = parse_args(argc, argv);
    const std::string cache = (std::filesystem::temp_directory_path() / fmt::format("jitc_models_{}", getpid())).string();
    if (!std::getenv("JITC_CACHE_DIR")) setenv("JITC_CACHE_DIR", cache.c_str(), 1);  // cold compiles
    CountingAllocator& allocator = CountingAllocator::install();
    // Built before inference mode, as a serving process loads its model at start-up and then serves
    // under c10::InferenceMode: parameters made inside it are inference tensors, whose in-place updates
    // no version counter records, so jitc derives weights from them (frozen_convolutions.h) on every call.
    const std::vector<Model> models = make_models(ModelScale::kBenchmark, args.device, args.dtype);
    c10::InferenceMode inference;
    std::vector<Row> rows;
    set_timing_on_gpu(args.device.is_cuda());
    for (const Model& model : models) {
      if (!args.only.empty() && std::find(args.only.begin(), args.only.end(), model.name) == args.only.end()) continue;
      fmt::print(stderr, "{} ...\n", model.name);
      try {
        rows.push_back(measure(model, args, allocator));
      } catch (const std::exception& e) {
        rows.push_back({model.name, model.shapes});
        rows.back().error = e.what();
      }
    }
    std::optional<PeerRun> peer;
    if (!args.peer.empty()) peer = read_peer_results(args.peer);
    print_table(rows, peer ? &*peer : nullptr);
    std::ofstream(args.out) << json_of(rows, at::get_num_threads());
    std::filesystem::remove_all(cache);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_models: {}\n", e.what());
    return 2;
  }
}
