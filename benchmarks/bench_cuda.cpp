// CUDA workloads (the shapes of reference/h100_baseline.md): eager vs jitc (backend inductor), mode default
// and mode reduce-overhead, per call; with --peer, torch.compile mode default and mode "reduce-overhead" from
// peer_torch_compile.py --device cuda (same workloads, same timing) next to them. Also: the copy bandwidth
// measured in the same run as the roofline and % of it, peak GPU memory of each (from the caching
// allocator), the memory a compiled function keeps reserved (CUDA-graph pools), the time of the first calls
// (trace + compile, and capture for reduce-overhead), and the host cost of one call on a 16-element tensor.
// Usage (GPU host): bench_cuda [out.json] [--peer peer_cuda.json]. benchmarks/gpu_check.sh bench runs both.
// --debug-cpu runs the flow on the CPU with shapes divided by 16, to test this program without a GPU.
#include <cstdlib>
#include <jitc/jitc.h>

#include "inductor/cuda/codegen.h"
#include "peer_results.h"
#include "inductor/cuda/jit.h"

#include <ATen/ATen.h>
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using Args = std::vector<at::Tensor>;
using Fn = std::function<at::Tensor(const Args&)>;
using jitc::bench::CudaPeerMode;
using jitc::bench::CudaPeerRun;
using jitc::bench::CudaPeerWorkload;

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();  // "-" in the table, null in the JSON
constexpr int kFirstCalls = 3;  // trace, compile, and (reduce-overhead) capture happen within these
// peer_torch_compile.py's names of torch.compile's modes.
const std::string kTcDefault = "default", kTcRo = "reduce-overhead", kTcRoStatic = "reduce-overhead-static-inputs";

// --debug-cpu: the workloads, shrunk, on the CPU, without the allocator's counters (tests this program's
// flow and its tables where no GPU is; the numbers mean nothing).
bool g_cpu = false;
int64_t g_shrink = 1;

void gpu_sync() {
  if (!g_cpu) c10::cuda::device_synchronize();
}

// Milliseconds per call: calls queued back to back, then one synchronize; the best of 5 rounds.
double ms_per_call(const std::function<void()>& f, int calls) {
  for (int i = 0; i < 3; ++i) f();
  gpu_sync();
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < calls; ++i) f();
    gpu_sync();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - start).count() / calls);
  }
  return best;
}

int64_t peak_bytes(const std::function<void()>& f) {
  if (g_cpu) return f(), 0;
  gpu_sync();
  c10::cuda::CUDACachingAllocator::resetPeakStats(0);
  const int64_t before = c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocated_bytes[0].current;
  f();
  gpu_sync();
  return c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocated_bytes[0].peak - before;
}

// Reserved bytes once the unused cached blocks are released: its growth over compile and warm-up is what a
// compiled function keeps (a CUDA-graph memory pool), as peer_torch_compile.py measures it.
int64_t reserved_after_empty_cache() {
  if (g_cpu) return 0;
  gpu_sync();
  c10::cuda::CUDACachingAllocator::emptyCache();
  return c10::cuda::CUDACachingAllocator::getDeviceStats(0).reserved_bytes[0].current;
}

struct Workload {
  std::string key;  // peer_torch_compile.py's key for the same workload
  std::string name;
  std::function<Args()> inputs;
  Fn fn;
  bool memory_bound = true;
  int calls = 50;  // per timing round; the peer uses the same
};

at::Tensor randn(std::vector<int64_t> sizes, c10::ScalarType dtype = at::kFloat) {
  if (g_cpu)
    for (auto& d : sizes) d = d >= 512 ? d / g_shrink : d;
  return at::randn(sizes, at::TensorOptions().device(g_cpu ? at::kCPU : at::kCUDA).dtype(dtype));
}

// conv3x3-bn-relu-conv3x3-bn + x, relu, batch norms in inference. Inputs: x, the two conv weights, then
// per batch norm its weight, bias, running mean and running variance (kept away from zero).
Args resnet_block_inputs() {
  Args a{randn({32, 64, 56, 56}), randn({64, 64, 3, 3}) * 0.06, randn({64, 64, 3, 3}) * 0.06};
  for (int i = 0; i < 2; ++i)
    a.insert(a.end(), {randn({64}).abs() + 0.5, randn({64}) * 0.1, randn({64}) * 0.1, randn({64}).abs() + 0.5});
  return a;
}

at::Tensor resnet_block(const Args& a) {
  auto batch_norm = [&](const at::Tensor& t, int i) {
    return at::batch_norm(t, a[3 + 4 * i], a[4 + 4 * i], a[5 + 4 * i], a[6 + 4 * i], /*training=*/false,
                          /*momentum=*/0.1, /*eps=*/1e-5, /*cudnn_enabled=*/true);
  };
  const at::Tensor y = at::relu(batch_norm(at::conv2d(a[0], a[1], {}, 1, 1), 0));
  return at::relu(batch_norm(at::conv2d(y, a[2], {}, 1, 1), 1) + a[0]);
}

// The same keys, names, shapes, dtypes and ops as cuda_workloads() in peer_cuda_workloads.py: change both.
std::vector<Workload> workloads() {
  return {
      {"pointwise", "pointwise (sin+cos).relu 4096x4096", [] { return Args{randn({4096, 4096})}; },
       [](const Args& a) { return (a[0].sin() + a[0].cos()).relu(); }},
      {"bias_gelu", "bias + tanh-GELU * 0.5 + x 8192x4096", [] { return Args{randn({8192, 4096}), randn({4096})}; },
       [](const Args& a) { return at::gelu(a[0] + a[1], "tanh") * 0.5 + a[0]; }},
      {"softmax", "softmax(x*0.125, -1) 8192x4096", [] { return Args{randn({8192, 4096})}; },
       [](const Args& a) { return at::softmax(a[0] * 0.125, -1); }},
      {"layer_norm", "layer_norm 8192x4096", [] { return Args{randn({8192, 4096}), randn({4096}), randn({4096})}; },
       [](const Args& a) { return at::layer_norm(a[0], {a[0].size(-1)}, a[1], a[2]); }},
      {"rms_norm_residual", "RMSNorm + residual (1 output) 8192x4096",
       [] { return Args{randn({8192, 4096}), randn({8192, 4096}), randn({4096})}; },
       [](const Args& a) {
         const auto h = a[0] + a[1];
         return h * at::rsqrt((h * h).mean(-1, true) + 1e-6) * a[2];
       }},
      {"row_sum_squares", "(x*x).sum(1) 8192x4096", [] { return Args{randn({8192, 4096})}; },
       [](const Args& a) { return (a[0] * a[0]).sum(1); }},
      {"column_sum", "x.sum(0) 8192x4096", [] { return Args{randn({8192, 4096})}; },
       [](const Args& a) { return a[0].sum(0); }},
      {"full_mean_squares", "(x*x).mean() 8192x4096", [] { return Args{randn({8192, 4096})}; },
       [](const Args& a) { return (a[0] * a[0]).mean(); }},
      {"mlp", "MLP linear-gelu-linear + x 4096x1024",
       [] { return Args{randn({4096, 1024}), randn({4096, 1024}) * 0.03, randn({1024, 4096}) * 0.03}; },
       [](const Args& a) { return at::linear(at::gelu(at::linear(a[0], a[1])), a[2]) + a[0]; }, false},
      {"attention", "attention softmax(qk^T/8)v 8x16x512x64",
       [] { return Args{randn({8, 16, 512, 64}), randn({8, 16, 512, 64}), randn({8, 16, 512, 64})}; },
       [](const Args& a) { return at::matmul(at::softmax(at::matmul(a[0], a[1].transpose(-2, -1)) / 8.0, -1), a[2]); },
       false},
      {"tiny_chain", "tiny chain 10x(x*1.01+0.1), relu 16", [] { return Args{randn({16})}; },
       [](const Args& a) {
         auto x = a[0];
         for (int i = 0; i < 10; ++i) x = x * 1.01 + 0.1;
         return x.relu();
       },
       false},
      {"bf16_silu", "bf16 sigmoid(x)*x 8192x8192", [] { return Args{randn({8192, 8192}, at::kBFloat16)}; },
       [](const Args& a) { return a[0].sigmoid() * a[0]; }},
      {"resnet_block", "ResNet basic block (eval) 32x64x56x56", resnet_block_inputs, resnet_block, false},
      {"full_var", "x.var() 8192x4096", [] { return Args{randn({8192, 4096})}; }, [](const Args& a) { return a[0].var(); }},
  };
}

int64_t bytes_of(const Args& in, const at::Tensor& out) {
  int64_t b = out.numel() * out.element_size();
  for (const auto& t : in) b += t.numel() * t.element_size();
  return b;
}

// Stats::cudagraph_captures/replays once lib/ has them (mode reduce-overhead); -1 before.
template <class S>
int64_t captures_of(const S& s) {
  if constexpr (requires { s.cudagraph_captures; }) return s.cudagraph_captures;
  else return -1;
}
template <class S>
int64_t replays_of(const S& s) {
  if constexpr (requires { s.cudagraph_replays; }) return s.cudagraph_replays;
  else return -1;
}

struct JitcResult {
  double ms = kNone, first_calls_s = kNone, max_abs_diff = kNone, peak_bytes = kNone, held_bytes = kNone;
  int64_t kernels = 0, captures = -1, replays = -1;
  std::string error;
};

JitcResult run_jitc(const Workload& w, const Args& in, const at::Tensor& want, jitc::Mode mode) {
  JitcResult r;
  try {
    const double reserved = reserved_after_empty_cache();
    jitc::Options options;
    options.mode = mode;
    options.name = w.key + (mode == jitc::Mode::kDefault ? "" : std::string("_") + jitc::to_string(mode));
    auto compiled = jitc::compile([fn = w.fn](const Args& a) { return fn(a); }, options);
    const auto t0 = Clock::now();
    for (int i = 0; i < kFirstCalls; ++i) compiled(in);
    gpu_sync();
    r.first_calls_s = std::chrono::duration<double>(Clock::now() - t0).count();
    {
      const at::Tensor got = compiled(in);
      r.max_abs_diff = (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>();
    }
    r.held_bytes = reserved_after_empty_cache() - reserved;
    r.ms = ms_per_call([&] { compiled(in); }, w.calls);
    r.peak_bytes = peak_bytes([&] { compiled(in); });
    const auto s = compiled.stats();
    r.kernels = s.kernels_compiled;
    r.captures = captures_of(s);
    r.replays = replays_of(s);
  } catch (const std::exception& e) {  // one failing mode must not hide the other results
    r.error = e.what();
    std::fprintf(stderr, "ERROR %s (jitc %s): %s\n", w.key.c_str(), jitc::to_string(mode), e.what());
  }
  return r;
}

// A torch.compile mode of the peer file, or nullptr when absent or failed.
const CudaPeerMode* peer_mode(const CudaPeerWorkload* w, const std::string& mode) {
  if (!w) return nullptr;
  const auto it = w->modes.find(mode);
  return it == w->modes.end() || !it->second.error.empty() ? nullptr : &it->second;
}

double ms_of(const CudaPeerMode* m) { return m ? m->ms : kNone; }

std::string num(double v, const char* spec) { return std::isfinite(v) ? fmt::format(fmt::runtime(spec), v) : "-"; }
std::string ratio(double num_ms, double den_ms) {
  return std::isfinite(num_ms) && std::isfinite(den_ms) && den_ms > 0 ? fmt::format("{:.2f}x", num_ms / den_ms) : "-";
}
std::string mb(double bytes) { return num(bytes / 1e6, "{:.0f}"); }
std::string json_num(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n' || c == '\t') ? ' ' : c;
  }
  return out;
}

std::string json_jitc(const JitcResult& r) {
  return fmt::format(
      "{{\"ms\": {}, \"first_calls_s\": {}, \"kernels\": {}, \"peak_bytes\": {}, \"held_bytes\": {}, \"max_abs_diff\": "
      "{}, \"cudagraph_captures\": {}, \"cudagraph_replays\": {}, \"error\": \"{}\"}}",
      json_num(r.ms), json_num(r.first_calls_s), r.kernels, json_num(r.peak_bytes), json_num(r.held_bytes),
      json_num(r.max_abs_diff),
      r.captures, r.replays, json_escape(r.error));
}

std::string json_peer(const CudaPeerWorkload* w) {
  if (!w) return "null";
  std::string out = fmt::format("{{\"eager_ms\": {}, \"peak_bytes_eager\": {}", json_num(w->eager_ms), w->peak_bytes_eager);
  for (const auto& [mode, m] : w->modes)
    out += fmt::format(
        ", \"{}\": {{\"ms\": {}, \"first_calls_s\": {}, \"peak_bytes\": {}, \"held_bytes\": {}, \"max_abs_diff\": {}, "
        "\"match\": {}, \"cudagraph_skips\": {}, \"error\": \"{}\"}}",
        mode, m.error.empty() ? json_num(m.ms) : "null", json_num(m.first_calls_s), m.peak_bytes, m.held_bytes,
        json_num(m.max_abs_diff), m.match ? "true" : "false", m.cudagraph_skips, json_escape(m.error));
  return out + "}";
}

struct Row {
  const Workload* w = nullptr;
  double eager_ms = 0, roofline_ms = 0;
  int64_t peak_eager = 0;
  JitcResult jitc, jitc_ro;
  const CudaPeerWorkload* peer = nullptr;
};

std::string roofline_pct(const Row& r, double ms) {
  if (!r.w->memory_bound) return "-";
  return std::isfinite(ms) ? fmt::format("{:.0f}%", 100 * r.roofline_ms / ms) : "-";
}

void print_tables(const std::vector<Row>& rows, bool have_peer) {
  std::printf("\nTime per call (ms; RO = mode reduce-overhead; tc = torch.compile; \"jitc vs tc\" = tc ms / jitc ms, "
              "above 1 = jitc faster; %% roofline = bytes that must move / copy bandwidth)\n\n");
  std::printf("| workload | eager | jitc | jitc RO | tc | tc RO | tc RO static inputs | jitc vs eager | jitc vs tc | "
              "jitc RO vs tc RO | %% roofline jitc / jitc RO / tc / tc RO |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    const double tc = ms_of(peer_mode(r.peer, kTcDefault)), tc_ro = ms_of(peer_mode(r.peer, kTcRo));
    const double tc_static = ms_of(peer_mode(r.peer, kTcRoStatic));
    std::printf("| %s | %.4f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.w->name.c_str(), r.eager_ms,
                num(r.jitc.ms, "{:.4f}").c_str(), num(r.jitc_ro.ms, "{:.4f}").c_str(), num(tc, "{:.4f}").c_str(),
                num(tc_ro, "{:.4f}").c_str(), num(tc_static, "{:.4f}").c_str(), ratio(r.eager_ms, r.jitc.ms).c_str(),
                ratio(tc, r.jitc.ms).c_str(), ratio(tc_ro, r.jitc_ro.ms).c_str(),
                r.w->memory_bound ? fmt::format("{} / {} / {} / {}", roofline_pct(r, r.jitc.ms), roofline_pct(r, r.jitc_ro.ms),
                                                roofline_pct(r, tc), roofline_pct(r, tc_ro))
                                        .c_str()
                                  : "-");
  }
  std::printf("\nFirst calls, memory, accuracy (first 3 calls s: trace/compile and CUDA-graph capture, + synchronize; "
              "peak MB: allocated over one steady-state call; held MB: reserved growth over compile + warm-up, "
              "the CUDA-graph pool)\n\n");
  std::printf("| workload | jitc kernels compiled | jitc RO graphs captured | first 3 calls s jitc / jitc RO / tc / tc RO | "
              "peak MB eager / jitc / jitc RO / tc / tc RO | held MB jitc RO / tc RO | max abs diff jitc / jitc RO / tc / tc RO |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    const CudaPeerMode* tc = peer_mode(r.peer, kTcDefault);
    const CudaPeerMode* tc_ro = peer_mode(r.peer, kTcRo);
    auto tc_first = [](const CudaPeerMode* m) { return m ? num(m->first_calls_s, "{:.2f}") : "-"; };
    auto tc_peak = [](const CudaPeerMode* m) { return m ? mb(m->peak_bytes) : "-"; };
    auto tc_diff = [](const CudaPeerMode* m) { return m ? num(m->max_abs_diff, "{:.2g}") : "-"; };
    std::printf("| %s | %lld | %s | %s / %s / %s / %s | %s / %s / %s / %s / %s | %s / %s | %s / %s / %s / %s |\n",
                r.w->name.c_str(), static_cast<long long>(r.jitc.kernels),
                r.jitc_ro.captures < 0 ? "-" : std::to_string(r.jitc_ro.captures).c_str(),
                num(r.jitc.first_calls_s, "{:.3f}").c_str(), num(r.jitc_ro.first_calls_s, "{:.3f}").c_str(),
                tc_first(tc).c_str(), tc_first(tc_ro).c_str(), mb(r.peak_eager).c_str(), mb(r.jitc.peak_bytes).c_str(),
                mb(r.jitc_ro.peak_bytes).c_str(), tc_peak(tc).c_str(), tc_peak(tc_ro).c_str(),
                mb(r.jitc_ro.held_bytes).c_str(), tc_ro ? mb(tc_ro->held_bytes).c_str() : "-",
                num(r.jitc.max_abs_diff, "{:.2g}").c_str(), num(r.jitc_ro.max_abs_diff, "{:.2g}").c_str(),
                tc_diff(tc).c_str(), tc_diff(tc_ro).c_str());
  }
  if (!have_peer) std::printf("\n(no --peer file: the torch.compile columns are empty)\n");
  for (const Row& r : rows) {
    if (!r.peer) continue;
    for (const auto& [mode, m] : r.peer->modes) {
      if (!m.error.empty()) std::printf("torch.compile %s failed on %s: %s\n", mode.c_str(), r.w->key.c_str(), m.error.c_str());
      else if (!m.match) std::printf("torch.compile %s on %s: MISMATCH vs eager (max abs diff %.3g)\n", mode.c_str(), r.w->key.c_str(), m.max_abs_diff);
      if (m.cudagraph_skips > 0) std::printf("torch.compile %s on %s: Inductor skipped CUDA graphs\n", mode.c_str(), r.w->key.c_str());
    }
  }
}

}  // namespace

// Host time of calls taken in turns: each round runs every function 200 times (timed), synchronizing
// the GPU after each function (not timed), and each function's median round is its time. A long
// unsynchronized loop would fill the launch queue and time the GPU's pace instead; turns spread a slow
// spell of the shared host over all the functions alike, so their differences hold within one run.
std::vector<double> host_us_in_turns(const std::vector<std::function<void()>>& fs) {
  for (const auto& f : fs) {
    for (int i = 0; i < 1000; ++i) f();
    gpu_sync();
  }
  std::vector<std::vector<double>> rounds(fs.size());
  for (int r = 0; r < 50; ++r)
    for (size_t k = 0; k < fs.size(); ++k) {
      const auto start = Clock::now();
      for (int i = 0; i < 200; ++i) fs[k]();
      rounds[k].push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() / 200);
      gpu_sync();
    }
  std::vector<double> medians;
  for (auto& v : rounds) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    medians.push_back(v[v.size() / 2]);
  }
  return medians;
}

// Host cost of one call on 16 elements, (x*2+1).relu(), with the pieces of it that are not jitc's own,
// all timed in turns: allocating the output from the caching allocator, launching an empty kernel with
// jitc's parameters as jitc does, the two together (the floor of any call that allocates and launches),
// a compiled call that returns its input (guards and call plumbing, no kernel), and the empty kernel's
// launch as a plain cuLaunchKernel (without programmatic dependent launch).
struct HostCosts {
  double eager_us = kNone, jitc_us = kNone, jitc_ro_us = kNone;
  double allocate_us = kNone, launch_us = kNone, floor_us = kNone, noop_us = kNone, plain_launch_us = kNone;
};

// An empty kernel with jitc's parameters, for timing its launch alone: as jitc launches (overlapping
// the previous kernel where the device allows it) or as a plain cuLaunchKernel.
class EmptyKernel {
 public:
  EmptyKernel()
      : module_(jitc::inductor::cuda::compile_cuda_module(jitc::inductor::cuda_prelude() +
                                                       "struct Buffers { void* p[2]; };\n"
                                                       "extern \"C\" __global__ void empty_kernel(Buffers buffers, Symbols symbols, long long tiles) {}\n",
                                                   "empty_kernel", 0)),
        function_(module_->function("empty_kernel")),
        stream_(jitc::inductor::cuda::current_cuda_stream(0)) {}

  void launch(void* input, void* output, bool plain = false) const {
    static const int64_t no_symbols = 0;
    void* buffers[2] = {input, output};
    jitc::inductor::cuda::launch_cuda_kernel(function_, 32, 1, buffers, 2, &no_symbols, 0, stream_, "empty_kernel",
                                      !plain && jitc::inductor::cuda::supports_programmatic_launch(0));
  }

 private:
  std::unique_ptr<jitc::inductor::cuda::CudaModule> module_;
  void* function_;
  void* stream_;
};

HostCosts host_costs(bool with_ro) {
  const auto x = randn({16});
  auto small = jitc::compile([](const at::Tensor& t) { return (t * 2 + 1).relu(); });
  jitc::Options ro_options;
  ro_options.mode = jitc::Mode::kReduceOverhead;
  auto small_ro = jitc::compile([](const at::Tensor& t) { return (t * 2 + 1).relu(); }, ro_options);
  auto noop = jitc::compile([](const at::Tensor& t) { return t; });
  std::vector<std::function<void()>> fs = {[&] { (x * 2 + 1).relu(); }, [&] { small(x); }, [&] { noop(x); },
                                           [&] { small_ro(x); }};
  std::optional<EmptyKernel> empty;
  auto allocate = [&] { return at::detail::empty_strided_cuda({16}, {1}, at::kFloat, x.device()); };
  if (!g_cpu) {
    empty.emplace();
    fs.push_back([&] { allocate(); });
    fs.push_back([&] { empty->launch(x.data_ptr(), nullptr); });
    fs.push_back([&] { empty->launch(x.data_ptr(), allocate().data_ptr()); });
    fs.push_back([&] { empty->launch(x.data_ptr(), nullptr, /*plain=*/true); });
  }
  if (!with_ro) fs[3] = [] {};
  const auto us = host_us_in_turns(fs);
  HostCosts out{us[0], us[1], with_ro ? us[3] : kNone};
  out.noop_us = us[2];
  if (!g_cpu) out.allocate_us = us[4], out.launch_us = us[5], out.floor_us = us[6], out.plain_launch_us = us[7];
  return out;
}

int main(int argc, char** argv) {
  // First calls are timed with their code generation (the background builds are off: issue 25 asks for
  // the opt-out where benchmarks time compiles); JITC_COMPILE_IN_BACKGROUND=1 in the environment wins.
  setenv("JITC_COMPILE_IN_BACKGROUND", "0", /*overwrite=*/0);
  std::string json_path = "cuda_bench.json", peer_path;
  bool with_ro = true;  // --no-reduce-overhead: skip jitc's mode reduce-overhead
  // --jitc-mode max-autotune-no-cudagraphs: the "jitc" column in another mode (JITC_LOGS=perf_hints then
  // prints each kernel's AUTOTUNE timings)
  jitc::Mode jitc_mode = jitc::Mode::kDefault;
  std::set<std::string> only;  // --only key1,key2: just these workloads (profiling runs)
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--peer" && i + 1 < argc) {
      peer_path = argv[++i];
    } else if (arg == "--jitc-mode" && i + 1 < argc) {
      const std::string name = argv[++i];
      for (auto m : {jitc::Mode::kDefault, jitc::Mode::kReduceOverhead, jitc::Mode::kMaxAutotune, jitc::Mode::kMaxAutotuneNoCudagraphs})
        if (name == jitc::to_string(m)) jitc_mode = m;
    } else if (arg == "--only" && i + 1 < argc) {
      std::stringstream keys(argv[++i]);
      for (std::string key; std::getline(keys, key, ',');) only.insert(key);
    } else if (arg == "--no-reduce-overhead") {
      with_ro = false;
    } else if (arg == "--debug-cpu") {
      g_cpu = true;
      g_shrink = 16;
    } else if (arg.rfind("--", 0) == 0) {
      std::fprintf(stderr, "unknown flag %s; usage: bench_cuda [out.json] [--peer peer_cuda.json] [--no-reduce-overhead] [--jitc-mode MODE] [--only key1,key2] [--debug-cpu]\n", arg.c_str());
      return 2;
    } else {
      json_path = arg;
    }
  }
  std::optional<CudaPeerRun> peer;
  if (!peer_path.empty()) {
    try {
      peer = jitc::bench::read_cuda_peer_results(peer_path);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_cuda: %s\n", e.what());
      return 2;
    }
    if (peer->device != "cuda") std::fprintf(stderr, "WARNING: %s was run on %s, not CUDA (--debug-cpu?)\n", peer_path.c_str(), peer->device.c_str());
  }
  c10::InferenceMode guard;
  // Convolutions in full float32 (the peer script does the same), so that results compare at float32's
  // tolerance; cuDNN's default TF32 differs from float32 by about 1e-3.
  at::globalContext().setAllowTF32CuDNN(false);
  auto src = randn({64 << 20}), dst = randn({64 << 20});
  const double copy_ms = ms_per_call([&] { dst.copy_(src); }, 50);
  const double copy_gbs = 2.0 * src.numel() * 4 / (copy_ms * 1e-3) / 1e9;
  src.reset();
  dst.reset();
  std::printf("device copy bandwidth (read + write): %.0f GB/s\n", copy_gbs);
  if (peer)
    std::printf("torch.compile peer: %s (%s); its copy bandwidth %.0f GB/s\n", peer->machine.c_str(), peer_path.c_str(),
                peer->copy_gbs);

  std::vector<Workload> all = workloads();
  std::vector<Row> rows;
  for (const auto& w : all) {
    if (!only.empty() && !only.count(w.key)) continue;
    std::fprintf(stderr, "running %s\n", w.key.c_str());
    Row r;
    r.w = &w;
    if (peer) {
      const auto it = peer->workloads.find(w.key);
      if (it == peer->workloads.end()) {
        std::fprintf(stderr, "WARNING: %s has no workload %s\n", peer_path.c_str(), w.key.c_str());
      } else {
        r.peer = &it->second;
        if (r.peer->calls != w.calls || r.peer->name != w.name)
          std::fprintf(stderr, "WARNING: %s: the peer's workload differs (\"%s\", %d calls per round; here \"%s\", %d)\n",
                       w.key.c_str(), r.peer->name.c_str(), r.peer->calls, w.name.c_str(), w.calls);
      }
    }
    const Args in = w.inputs();
    const at::Tensor want = w.fn(in);
    r.eager_ms = ms_per_call([&] { w.fn(in); }, w.calls);
    r.peak_eager = peak_bytes([&] { w.fn(in); });
    r.roofline_ms = bytes_of(in, want) / (copy_gbs * 1e9) * 1e3;
    r.jitc = run_jitc(w, in, want, jitc_mode);
    if (with_ro) r.jitc_ro = run_jitc(w, in, want, jitc::Mode::kReduceOverhead);
    std::fprintf(stderr, "row %s: eager %.4f ms, jitc %.4f ms, jitc RO %.4f ms, roofline %.4f ms\n", w.key.c_str(),
                 r.eager_ms, r.jitc.ms, r.jitc_ro.ms, r.roofline_ms);
    rows.push_back(std::move(r));
  }

  const HostCosts host = host_costs(with_ro);

  print_tables(rows, peer.has_value());
  std::printf("\nhost cost of one call on 16 elements, (x*2+1).relu(), no synchronize: eager (C++) %.2f us, jitc %.2f us, "
              "jitc RO %s us", host.eager_us, host.jitc_us, num(host.jitc_ro_us, "{:.2f}").c_str());
  if (peer) {
    for (const std::string& mode : {std::string("eager"), kTcDefault, kTcRo, kTcRoStatic}) {
      const auto it = peer->host_us.find(mode);
      if (it != peer->host_us.end())
        std::printf(", %s %.2f us", mode == "eager" ? "eager (Python)" : ("torch.compile " + mode).c_str(), it->second);
    }
  }
  std::printf("\n");
  std::printf("pieces of a call (timed in turns with it): a compiled call that returns its input %.2f us", host.noop_us);
  if (!g_cpu)
    std::printf(", output allocation (caching allocator) %.2f us, launch of an empty kernel with jitc's parameters %.2f us "
                "(plain cuLaunchKernel %.2f us), the allocation and launch together %.2f us", host.allocate_us, host.launch_us,
                host.plain_launch_us, host.floor_us);
  std::printf("\n");

  std::ofstream json(json_path);
  json << "{\"copy_gbs\": " << copy_gbs << ", \"peer\": ";
  if (peer) {
    json << fmt::format("{{\"file\": \"{}\", \"machine\": \"{}\", \"device\": \"{}\", \"copy_gbs\": {}, \"host_us\": {{",
                        json_escape(peer_path), json_escape(peer->machine), peer->device, json_num(peer->copy_gbs));
    const char* sep = "";
    for (const auto& [mode, us] : peer->host_us) {
      json << sep << "\"" << mode << "\": " << json_num(us);
      sep = ", ";
    }
    json << "}}";
  } else {
    json << "null";
  }
  json << ", \"workloads\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double tc = ms_of(peer_mode(r.peer, kTcDefault)), tc_ro = ms_of(peer_mode(r.peer, kTcRo));
    json << (i ? ",\n" : "")
         << fmt::format("  {{\"key\": \"{}\", \"name\": \"{}\", \"calls\": {}, \"memory_bound\": {}, \"eager_ms\": {}, "
                        "\"roofline_ms\": {}, \"peak_bytes_eager\": {}, \"jitc\": {}, \"jitc_reduce_overhead\": {}, "
                        "\"torch_compile\": {}, \"jitc_vs_torch_compile\": {}, \"jitc_ro_vs_torch_compile_ro\": {}}}",
                        r.w->key, json_escape(r.w->name), r.w->calls, r.w->memory_bound ? "true" : "false",
                        json_num(r.eager_ms), json_num(r.roofline_ms), r.peak_eager, json_jitc(r.jitc),
                        json_jitc(r.jitc_ro), json_peer(r.peer), json_num(tc / r.jitc.ms), json_num(tc_ro / r.jitc_ro.ms));
  }
  json << "\n], \"host_us_eager\": " << host.eager_us << ", \"host_us_jitc\": " << host.jitc_us
       << ", \"host_us_jitc_reduce_overhead\": " << json_num(host.jitc_ro_us) << ", \"host_us_jitc_noop\": " << json_num(host.noop_us)
       << ", \"host_us_allocate\": " << json_num(host.allocate_us) << ", \"host_us_empty_launch\": " << json_num(host.launch_us)
       << ", \"host_us_allocate_and_launch\": " << json_num(host.floor_us)
       << ", \"host_us_empty_plain_launch\": " << json_num(host.plain_launch_us) << "}\n";
  return 0;
}
