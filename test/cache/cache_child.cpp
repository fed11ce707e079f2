// A separate process for the disk cache tests: compiles two functions (four kernels) in whatever
// JITC_CACHE_DIR it is given, checks results against eager, and prints its counters on one line:
//   kernels_compiled=4 programs_from_cache=0 codegen_ms=41.2 ok=1
// The second function's two sums over dim 0 (of [32, 64] and [16, 128]) print as one function of their sizes
// (inductor/cpu/kernel_parameters.h): from the cache too, each launch passes its own sizes.
// With the argument `max-autotune`, both compile in that mode.
#include <jitc/jitc.h>

#include <ATen/ATen.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  c10::InferenceMode guard;
  jitc::Options options;
  if (argc > 1 && std::string(argv[1]) == "max-autotune") options.mode = jitc::Mode::kMaxAutotune;
  auto softmax = jitc::compile([](const at::Tensor& x) { return at::softmax(x * 2, -1) + 1; }, options);
  auto norm_of = [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& z) {
    return std::make_tuple(at::layer_norm(x, {64}, w), x.sum(0), z.sum(0));
  };
  auto norm = jitc::compile(norm_of, options);
  const auto x = at::randn({32, 64}), w = at::randn({64}), z = at::randn({16, 128});
  bool ok = true;
  for (int call = 0; call < 2; ++call) {
    ok = ok && at::allclose(softmax(x), at::softmax(x * 2, -1) + 1, 1e-5, 1e-5);
    const auto [y, s, s16] = norm(x, w, z);
    const auto [y_eager, s_eager, s16_eager] = norm_of(x, w, z);
    ok = ok && at::allclose(y, y_eager, 1e-4, 1e-5) && at::allclose(s, s_eager, 1e-4, 1e-5) && at::allclose(s16, s16_eager, 1e-4, 1e-5);
  }
  const auto a = softmax.stats(), b = norm.stats();
  std::printf("kernels_compiled=%lld programs_from_cache=%lld codegen_ms=%.2f ok=%d\n",
              static_cast<long long>(a.kernels_compiled + b.kernels_compiled),
              static_cast<long long>(a.programs_from_cache + b.programs_from_cache), (a.codegen_seconds + b.codegen_seconds) * 1e3,
              ok ? 1 : 0);
  return ok ? 0 : 1;
}
