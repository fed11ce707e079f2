// The README's first command runs this: compile a small MLP-style callable, check that compiled results
// agree with eager LibTorch, and print the time per call of each.
#include <jitc/jitc.h>

#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>

namespace {

template <class F>
double micros_per_call(F&& f, int iterations) {
  f();  // warm up
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) f();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / iterations;
}

}  // namespace

int main() {
  at::manual_seed(0);
  c10::InferenceMode inference;
  const at::Tensor w = at::randn({64, 64});  // captured: read by reference at every call
  auto block = [&w](const at::Tensor& x, double scale) { return at::gelu(at::linear(x, w)) * scale + x; };

  auto compiled = jitc::compile(block, jitc::Options{.name = "mlp_block"});
  bool all_close = true;
  const auto started = std::chrono::steady_clock::now();
  for (int64_t batch : {8, 16, 32, 8}) {  // a changing batch: one recompile, then one symbolic entry
    const at::Tensor x = at::randn({batch, 64});
    const at::Tensor expected = block(x, 0.5);
    const at::Tensor got = compiled(x, 0.5);
    const bool close = at::allclose(got, expected);
    all_close = all_close && close;
    std::printf("batch %3lld: compiled vs eager max |diff| = %.3g  %s\n", static_cast<long long>(batch),
                (got - expected).abs().max().item<double>(), close ? "OK" : "MISMATCH");
  }
  std::printf("first four calls (traces, eager replays while programs build, checks): %.1f ms\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
  // The programs build in the background while calls replay eager's ops: wait for them before timing.
  compiled.wait_for_compiles();
  const at::Tensor x = at::randn({16, 64});
  const double eager_us = micros_per_call([&] { return block(x, 0.5); }, 2000);
  const double jitc_us = micros_per_call([&] { return compiled(x, 0.5); }, 2000);
  const auto s = compiled.stats();
  std::printf("time per call: eager %.2f us, jitc %.2f us (backend: inductor, fused CPU kernels)\n",
              eager_us, jitc_us);
  std::printf("stats: calls=%lld hits=%lld compiles=%lld recompiles=%lld entries=%lld compile time=%.1f ms "
              "(code generation %.1f ms, %lld kernels compiled, %lld programs from the cache)\n",
              static_cast<long long>(s.calls), static_cast<long long>(s.hits), static_cast<long long>(s.compiles),
              static_cast<long long>(s.recompiles), static_cast<long long>(s.entries), s.compile_seconds * 1e3,
              s.codegen_seconds * 1e3, static_cast<long long>(s.kernels_compiled), static_cast<long long>(s.programs_from_cache));
  std::printf("%s\n", all_close ? "compiled results agree with eager" : "MISMATCH between compiled and eager");
  return all_close ? 0 : 1;
}
