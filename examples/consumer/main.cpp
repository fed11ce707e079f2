// Compiles a small function with an installed jitc and checks it against eager; exits non-zero on a
// mismatch. Built and run by the test suite (test/consumer/run_consumer.cmake).
#include <jitc/jitc.h>

#include <ATen/ATen.h>

#include <cstdio>

int main() {
  const at::Tensor w = at::randn({16, 16});
  auto fn = [&w](const at::Tensor& x, double scale) { return at::gelu(at::linear(x, w)) * scale + x; };
  auto f = jitc::compile(fn);
  for (int call = 0; call < 3; ++call) {
    const at::Tensor x = at::randn({4, 16});
    const at::Tensor got = f(x, 0.5), want = fn(x, 0.5);
    if (!at::allclose(got, want, 1e-5, 1e-5)) {
      std::fprintf(stderr, "call %d: the compiled result differs from eager's\n", call);
      return 1;
    }
  }
  const auto stats = f.stats();
  std::printf("consumer: %lld calls, %lld compiles, %lld hits: compiled results match eager\n",
              static_cast<long long>(stats.calls), static_cast<long long>(stats.compiles),
              static_cast<long long>(stats.hits));
  return stats.compiles == 1 && stats.hits == 2 ? 0 : 1;
}
