// CUDA workloads (the shapes of reference/h100_baseline.md): eager vs jitc (backend inductor) per call,
// the copy bandwidth measured in the same run as the roofline, % of it, peak GPU memory of each (from the
// caching allocator), first-call (trace + compile) time, and the host cost of one call on a 16-element
// tensor. Usage (GPU host): bench_cuda [out.json]. benchmarks/gpu_check.sh bench builds and runs it.
#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using Args = std::vector<at::Tensor>;
using Fn = std::function<at::Tensor(const Args&)>;

void gpu_sync() { c10::cuda::device_synchronize(); }

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
  gpu_sync();
  c10::cuda::CUDACachingAllocator::resetPeakStats(0);
  const int64_t before = c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocated_bytes[0].current;
  f();
  gpu_sync();
  return c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocated_bytes[0].peak - before;
}

struct Workload {
  std::string name;
  std::function<Args()> inputs;
  Fn fn;
  bool memory_bound = true;
};

at::Tensor randn(at::IntArrayRef sizes, c10::ScalarType dtype = at::kFloat) {
  return at::randn(sizes, at::TensorOptions().device(at::kCUDA).dtype(dtype));
}

std::vector<Workload> workloads() {
  return {
      {"pointwise (sin+cos).relu 4096x4096", [] { return Args{randn({4096, 4096})}; },
       [](const Args& a) { return (a[0].sin() + a[0].cos()).relu(); }},
      {"bias + tanh-GELU * 0.5 + x 8192x4096", [] { return Args{randn({8192, 4096}), randn({4096})}; },
       [](const Args& a) { return at::gelu(a[0] + a[1], "tanh") * 0.5 + a[0]; }},
      {"softmax(x*0.125, -1) 8192x4096", [] { return Args{randn({8192, 4096})}; },
       [](const Args& a) { return at::softmax(a[0] * 0.125, -1); }},
      {"layer_norm 8192x4096", [] { return Args{randn({8192, 4096}), randn({4096}), randn({4096})}; },
       [](const Args& a) { return at::layer_norm(a[0], {4096}, a[1], a[2]); }},
      {"RMSNorm + residual (1 output) 8192x4096", [] { return Args{randn({8192, 4096}), randn({8192, 4096}), randn({4096})}; },
       [](const Args& a) {
         const auto h = a[0] + a[1];
         return h * at::rsqrt((h * h).mean(-1, true) + 1e-6) * a[2];
       }},
      {"(x*x).sum(1) 8192x4096", [] { return Args{randn({8192, 4096})}; }, [](const Args& a) { return (a[0] * a[0]).sum(1); }},
      {"MLP linear-gelu-linear + x 4096x1024", [] { return Args{randn({4096, 1024}), randn({4096, 1024}) * 0.03, randn({1024, 4096}) * 0.03}; },
       [](const Args& a) { return at::linear(at::gelu(at::linear(a[0], a[1])), a[2]) + a[0]; }, false},
      {"attention softmax(qk^T/8)v 8x16x512x64", [] { return Args{randn({8, 16, 512, 64}), randn({8, 16, 512, 64}), randn({8, 16, 512, 64})}; },
       [](const Args& a) { return at::matmul(at::softmax(at::matmul(a[0], a[1].transpose(-2, -1)) / 8.0, -1), a[2]); }, false},
      {"tiny chain 10x(x*1.01+0.1), relu 16", [] { return Args{randn({16})}; },
       [](const Args& a) {
         auto x = a[0];
         for (int i = 0; i < 10; ++i) x = x * 1.01 + 0.1;
         return x.relu();
       }, false},
      {"bf16 sigmoid(x)*x 8192x8192", [] { return Args{randn({8192, 8192}, at::kBFloat16)}; },
       [](const Args& a) { return a[0].sigmoid() * a[0]; }},
  };
}

int64_t bytes_of(const Args& in, const at::Tensor& out) {
  int64_t b = out.numel() * out.element_size();
  for (const auto& t : in) b += t.numel() * t.element_size();
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  c10::InferenceMode guard;
  const std::string json_path = argc > 1 ? argv[1] : "cuda_bench.json";
  auto src = randn({64 << 20}), dst = randn({64 << 20});
  const double copy_ms = ms_per_call([&] { dst.copy_(src); }, 50);
  const double copy_gbs = 2.0 * src.numel() * 4 / (copy_ms * 1e-3) / 1e9;
  std::printf("device copy bandwidth (read + write): %.0f GB/s\n\n", copy_gbs);
  std::printf("| workload | eager ms | jitc ms | speedup | jitc %% of roofline | first call s | kernels | peak MB eager | peak MB jitc | max |diff| |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::ofstream json(json_path);
  json << "{\"copy_gbs\": " << copy_gbs << ", \"workloads\": [\n";
  bool first_row = true;
  for (const auto& w : workloads()) {
    const Args in = w.inputs();
    auto compiled = jitc::compile([fn = w.fn](const Args& a) { return fn(a); });
    const auto t0 = Clock::now();
    compiled(in);
    const at::Tensor got = compiled(in);
    gpu_sync();
    const double first_s = std::chrono::duration<double>(Clock::now() - t0).count();
    const at::Tensor want = w.fn(in);
    const double diff = (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>();
    const double eager = ms_per_call([&] { w.fn(in); }, 50);
    const double jit = ms_per_call([&] { compiled(in); }, 50);
    const double roofline_ms = bytes_of(in, want) / (copy_gbs * 1e9) * 1e3;
    const int64_t peak_eager = peak_bytes([&] { w.fn(in); }), peak_jitc = peak_bytes([&] { compiled(in); });
    const auto s = compiled.stats();
    std::printf("| %s | %.4f | %.4f | %.2fx | %s | %.3f | %lld | %.1f | %.1f | %.2g |\n", w.name.c_str(), eager, jit, eager / jit,
                w.memory_bound ? fmt::format("{:.0f}%", 100 * roofline_ms / jit).c_str() : "-", first_s,
                static_cast<long long>(s.kernels_compiled), peak_eager / 1e6, peak_jitc / 1e6, diff);
    json << (first_row ? "" : ",\n") << "  {\"name\": \"" << w.name << "\", \"eager_ms\": " << eager << ", \"jitc_ms\": " << jit
         << ", \"roofline_ms\": " << roofline_ms << ", \"first_call_s\": " << first_s << ", \"kernels\": " << s.kernels_compiled
         << ", \"peak_bytes_eager\": " << peak_eager << ", \"peak_bytes_jitc\": " << peak_jitc << ", \"max_abs_diff\": " << diff << "}";
    first_row = false;
  }
  // Host cost of one call, no synchronization in the loop (the GPU work of a 16-element op is tiny).
  const auto x = randn({16});
  auto small = jitc::compile([](const at::Tensor& t) { return (t * 2 + 1).relu(); });
  small(x);
  small(x);
  auto host_us = [&](const std::function<void()>& f) {
    for (int i = 0; i < 1000; ++i) f();
    gpu_sync();
    const auto start = Clock::now();
    for (int i = 0; i < 20000; ++i) f();
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / 20000;
    gpu_sync();
    return us;
  };
  const double eager_us = host_us([&] { (x * 2 + 1).relu(); }), jitc_us = host_us([&] { small(x); });
  std::printf("\nhost cost of one call on 16 elements, (x*2+1).relu(): eager %.2f us, jitc %.2f us\n", eager_us, jitc_us);
  json << "\n], \"host_us_eager\": " << eager_us << ", \"host_us_jitc\": " << jitc_us << "}\n";
  return 0;
}
