// CPU workloads, eager vs jitc (issue 3). For every workload of workloads.h, in one run, under
// c10::InferenceMode and LibTorch's default thread count:
//   eager / jitc     time per call: warm-up, then the median of 9 batches of >= 20 ms each
//   first call       jitc's first call (trace + compile), wall clock, with an empty compile cache: a fresh
//                    JITC_CACHE_DIR unless the caller sets one (the peer script does the same for Inductor)
//   GB/s, % copy bw  the workload's minimal bytes / jitc's time, against a 64 MiB copy_ timed in this run
//   % same-size copy the same, against a copy_ that moves the workload's minimal bytes: with a large
//                    last-level cache (105 MiB on the developer machine) the [4096,1024] workloads stay
//                    cache-resident across calls, and this is the roofline that applies to them
//   peak MiB         bytes the CPU allocator handed out during one call (a counting allocator wraps it)
//   matches eager    allclose(jitc, eager, rtol 1e-4, atol 1e-5) on a call after the first (a replay)
// Prints a markdown table and writes JSON. Exits 1 when jitc fails or mismatches on a workload, or when
// the peer's eager results show that its workloads differ from these. Rows that other processes
// disturbed (a build on the same cores) are marked "!" and named on stderr.
//
// Usage, from the repository root:
//   ./build/benchmarks/bench_workloads [out.json] [--peer peer.json] [--only name1,name2]
//   ./build/benchmarks/bench_workloads benchmarks/workloads.json --peer benchmarks/peer_cpu.json
// out.json defaults to benchmarks/workloads.json. --peer adds torch.compile's time per call and the ratio
// torch.compile / jitc (> 1: jitc is faster) from the JSON that the peer script writes:
//   ~/.cache/jitc-setup/venv/bin/python benchmarks/peer_torch_compile.py benchmarks/peer_cpu.json
#include "bench_flags.h"
#include "contention_meter.h"
#include "counting_allocator.h"
#include "peer_results.h"
#include "report.h"
#include "workloads.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace jitc::bench {
namespace {

constexpr int kRepeats = 9;
constexpr double kBatchSeconds = 0.02;
constexpr double kRtol = 1e-4, kAtol = 1e-5;
constexpr double kChecksumRtol = 1e-5;  // a float64 sum of the same float32 values; only the order differs

struct Args {
  std::string out = "benchmarks/workloads.json";
  std::string peer;
  std::vector<std::string> only;
  jitc::Mode mode = jitc::Mode::kDefault;  // jitc's; the peer JSON says torch.compile's
};

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--peer" && i + 1 < argc) {
      args.peer = argv[++i];
    } else if (arg == "--only" && i + 1 < argc) {
      args.only = split_commas(argv[++i]);
    } else if (arg == "--mode" && i + 1 < argc) {
      args.mode = mode_named(argv[++i]);
    } else if (arg.rfind("--", 0) == 0) {
      throw std::runtime_error("unknown flag " + arg +
                               "; usage: bench_workloads [out.json] [--peer peer.json] "
                               "[--only name1,name2] [--mode max-autotune]");
    } else {
      args.out = arg;
    }
  }
  return args;
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    return colon == std::string::npos ? line : line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "unknown CPU";
}

double load_average() {
  std::ifstream loadavg("/proc/loadavg");
  double one_minute = 0;
  loadavg >> one_minute;
  return one_minute;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Batches of >= kBatchSeconds keep the clock's resolution and per-batch noise out of µs-scale workloads;
// the median drops the batches that a neighbour's build or a page-fault storm disturbed. The callables
// take turns batch by batch, so that a slow spell of the machine (a neighbour on the same host) falls on
// all of them alike and their ratios stay those of one moment. Returns each one's seconds per call.
std::vector<double> interleaved_seconds_per_call(const std::vector<std::function<void()>>& fns) {
  std::vector<int64_t> calls;
  for (const auto& f : fns) {
    for (int i = 0; i < 3; ++i) f();
    const auto start = std::chrono::steady_clock::now();
    f();
    const double one = std::max(seconds_since(start), 1e-9);
    calls.push_back(std::clamp<int64_t>(static_cast<int64_t>(kBatchSeconds / one), 1, 1000000));
  }
  std::vector<std::vector<double>> samples(fns.size());
  for (int r = 0; r < kRepeats; ++r)
    for (size_t turn = 0; turn < fns.size(); ++turn) {
      // Every other round runs in reverse order: what a callable leaves in the caches (or takes out of
      // them) then helps or hinders each of its neighbours alike.
      const size_t j = r % 2 == 0 ? turn : fns.size() - 1 - turn;
      const auto start = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < calls[j]; ++i) fns[j]();
      samples[j].push_back(seconds_since(start) / static_cast<double>(calls[j]));
    }
  std::vector<double> medians;
  for (auto& s : samples) {
    std::nth_element(s.begin(), s.begin() + kRepeats / 2, s.end());
    medians.push_back(s[kRepeats / 2]);
  }
  return medians;
}

double seconds_per_call(const std::function<void()>& f) { return interleaved_seconds_per_call({f}).front(); }

// One-time set-up of the compiler (code generator initialisation) would otherwise land on the first
// workload's first call; the peer script does the same for Inductor.
double startup_compile_seconds() {
  const auto compiled = jitc::compile([](const at::Tensor& x) { return x + 1; });
  const auto start = std::chrono::steady_clock::now();
  compiled(at::ones({16}));
  return seconds_since(start);
}

// A copy_ that reads bytes / 2 and writes bytes / 2.
std::function<void()> copy_of(int64_t bytes) {
  const at::Tensor src = at::randn({std::max<int64_t>(bytes / 8, 1)});
  at::Tensor dst = at::empty_like(src);
  return [src, dst]() mutable { dst.copy_(src); };
}

double copy_seconds(int64_t bytes) { return seconds_per_call(copy_of(bytes)); }

// A fresh JITC_CACHE_DIR makes first calls cold compiles, as the peer's fresh Inductor cache does; it is
// removed when the run ends. A caller's JITC_CACHE_DIR is used as it is (warm-start measurements).
class ColdCompileCache {
 public:
  ColdCompileCache() {
    if (std::getenv("JITC_CACHE_DIR")) return;
    std::string pattern = (std::filesystem::temp_directory_path() / "bench_workloads_cache_XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary JITC_CACHE_DIR");
    dir_ = pattern;
    setenv("JITC_CACHE_DIR", dir_.c_str(), 1);
  }
  ~ColdCompileCache() {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  ColdCompileCache(const ColdCompileCache&) = delete;
  ColdCompileCache& operator=(const ColdCompileCache&) = delete;
  std::string describe() const { return dir_.empty() ? std::getenv("JITC_CACHE_DIR") : "fresh (cold compiles)"; }

 private:
  std::string dir_;
};

std::string last_level_cache() {
  std::ifstream size("/sys/devices/system/cpu/cpu0/cache/index3/size");
  std::string text;
  return size >> text ? text : "unknown";
}

Machine describe_machine(const ColdCompileCache& compile_cache) {
  Machine machine;
  machine.cpu = cpu_model();
  machine.last_level_cache = last_level_cache();
  machine.threads = at::get_num_threads();
  machine.load_average = load_average();              // before this process loads the cores itself
  constexpr int64_t kCopyBytes = int64_t(128) << 20;  // 64 MiB read, 64 MiB written
  machine.copy_bytes_per_s = kCopyBytes / copy_seconds(kCopyBytes);
  machine.compile_cache = compile_cache.describe();
  machine.startup_compile_s = startup_compile_seconds();
  return machine;
}

// The result is part of what a call needs, so it stays alive until the peak is read.
template <class F>
int64_t peak_bytes_of_call(CountingAllocator& allocator, F&& f) {
  allocator.reset_peak();
  const int64_t before = allocator.live_bytes();
  const at::Tensor result = f();
  return allocator.peak_bytes() - before;
}

template <class Fn>
struct Arity;
template <class... A>
struct Arity<std::function<at::Tensor(A...)>> {
  static constexpr size_t value = sizeof...(A);
};

template <class F, size_t... I>
at::Tensor call_with(const F& f, const std::vector<at::Tensor>& inputs, std::index_sequence<I...>) {
  return f(inputs[I]...);
}

// Compiles fn, times its first call, checks a replay against eager's result and counts its peak memory;
// returns a call of the compiled function on the inputs, for the timing.
template <class Fn>
std::function<void()> prepare_jitc(Row& row, const Fn& fn, const std::vector<at::Tensor>& inputs, const at::Tensor& expected,
                                   CountingAllocator& allocator, jitc::Mode mode) {
  constexpr auto indices = std::make_index_sequence<Arity<Fn>::value>();
  jitc::Options options;
  options.mode = mode;
  options.name = row.workload->name;
  const auto compiled = jitc::compile(fn, options);
  const auto start = std::chrono::steady_clock::now();
  call_with(compiled, inputs, indices);
  row.first_call_s = seconds_since(start);
  // The first call's result is eager's by construction (it runs while tracing); the second is a replay.
  const at::Tensor actual = call_with(compiled, inputs, indices);
  row.match = actual.sizes() == expected.sizes() && at::allclose(actual, expected, kRtol, kAtol);
  row.max_abs_diff = actual.sizes() == expected.sizes() ? (actual - expected).abs().max().item<double>() : INFINITY;
  row.jitc_peak_bytes = peak_bytes_of_call(allocator, [&] { return call_with(compiled, inputs, indices); });
  row.stats = compiled.stats();
  return [compiled, &inputs, indices] { call_with(compiled, inputs, indices); };
}

// A same-size copy_, eager and jitc timed in turns (interleaved_seconds_per_call).
template <class Fn>
Row measure(const Workload& workload, const Fn& fn, CountingAllocator& allocator, jitc::Mode mode) {
  constexpr auto indices = std::make_index_sequence<Arity<Fn>::value>();
  Row row;
  row.workload = &workload;
  const ContentionMeter contention;
  const std::vector<at::Tensor> inputs = workload.make_inputs();
  const auto eager = [&] { return call_with(fn, inputs, indices); };
  row.eager_peak_bytes = peak_bytes_of_call(allocator, eager);
  const at::Tensor eager_result = call_with(fn, inputs, indices);
  row.eager_checksum = eager_result.to(at::kDouble).abs().sum().item<double>();
  std::vector<std::function<void()>> timed{copy_of(workload.min_bytes), eager};
  try {
    timed.push_back(prepare_jitc(row, fn, inputs, eager_result, allocator, mode));
  } catch (const std::exception& e) {
    row.error = e.what();
  }
  const std::vector<double> seconds = interleaved_seconds_per_call(timed);
  row.same_size_copy_s = seconds[0];
  row.eager_s = seconds[1];
  if (seconds.size() > 2) row.jitc_s = seconds[2];
  row.other_cores = contention.other_cores();
  return row;
}

std::vector<const Workload*> select(const std::vector<Workload>& workloads, const std::vector<std::string>& only) {
  std::vector<const Workload*> selected;
  for (const Workload& w : workloads)
    if (only.empty() || std::find(only.begin(), only.end(), w.name) != only.end()) selected.push_back(&w);
  for (const std::string& name : only) {
    if (std::none_of(workloads.begin(), workloads.end(), [&](const Workload& w) { return w.name == name; })) {
      std::string known;
      for (const Workload& w : workloads) known += " " + w.name;
      throw std::runtime_error("--only: no workload named '" + name + "'; known:" + known);
    }
  }
  return selected;
}

// Failures go to stderr as well as into the table, so that a scrolled-away table cannot hide them.
bool report_failures(const std::vector<Row>& rows) {
  bool failed = false;
  for (const Row& row : rows) {
    const char* name = row.workload->name.c_str();
    const jitc::Stats& s = row.stats;
    if (!row.error.empty()) {
      std::fprintf(stderr, "ERROR %s: jitc threw: %s\n", name, row.error.c_str());
      failed = true;
    } else if (!row.match) {
      std::fprintf(stderr, "MISMATCH %s: jitc differs from eager, max |diff| %g (rtol %g, atol %g)\n", name, row.max_abs_diff, kRtol,
                   kAtol);
      failed = true;
    }
    if (row.other_cores > kContendedCores) {
      std::fprintf(stderr,
                   "CONTENDED %s: other processes used %.2f cores while it ran; its times are not "
                   "representative, run again on a quiet machine\n",
                   name, row.other_cores);
    }
    if (row.error.empty() && row.match && (s.eager_fallbacks > 0 || s.graph_breaks > 0 || s.compiles != 1)) {
      // Not a failure, but the jitc column then measures something other than one compiled graph.
      std::fprintf(stderr, "NOTE %s: %lld compiles, %lld graph breaks, %lld eager fallbacks\n", name, static_cast<long long>(s.compiles),
                   static_cast<long long>(s.graph_breaks), static_cast<long long>(s.eager_fallbacks));
    }
  }
  return failed;
}

// The peer builds its workloads separately (Python); a differing eager result means the two lists
// drifted apart and the torch.compile column compares against something else.
bool report_peer_drift(const std::vector<Row>& rows, const PeerRun& peer) {
  bool drifted = false;
  for (const Row& row : rows) {
    auto it = peer.workloads.find(row.workload->name);
    if (it == peer.workloads.end()) continue;
    const double mine = row.eager_checksum, theirs = it->second.eager_checksum;
    if (std::abs(mine - theirs) <= kChecksumRtol * std::abs(mine)) continue;
    std::fprintf(stderr,
                 "PEER DRIFT %s: eager sum |result| is %.9g here and %.9g in the peer's JSON; "
                 "make workloads.cpp and peer_torch_compile.py build the same workload\n",
                 row.workload->name.c_str(), mine, theirs);
    drifted = true;
  }
  return drifted;
}

int run(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  const ColdCompileCache compile_cache;
  c10::InferenceMode inference;
  CountingAllocator& allocator = CountingAllocator::install();
  const std::optional<PeerRun> peer = args.peer.empty() ? std::nullopt : std::optional(read_peer_results(args.peer));
  const std::vector<Workload> workloads = make_workloads();
  const Machine machine = describe_machine(compile_cache);
  std::vector<Row> rows;
  for (const Workload* w : select(workloads, args.only)) {
    std::fprintf(stderr, "running %s\n", w->name.c_str());
    rows.push_back(std::visit([&](const auto& fn) { return measure(*w, fn, allocator, args.mode); }, w->fn));
  }
  print_table(machine, rows, peer);
  write_json(args.out, machine, rows, peer);
  std::printf("wrote %s\n", args.out.c_str());
  const bool drifted = peer && report_peer_drift(rows, *peer);
  return report_failures(rows) || drifted ? 1 : 0;
}

}  // namespace
}  // namespace jitc::bench

int main(int argc, char** argv) {
  // First calls are timed with their code generation (the background builds are off: issue 25 asks for
  // the opt-out where benchmarks time compiles); JITC_COMPILE_IN_BACKGROUND=1 in the environment wins.
  setenv("JITC_COMPILE_IN_BACKGROUND", "0", /*overwrite=*/0);
  try {
    return jitc::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_workloads: %s\n", e.what());
    return 2;
  }
}
