// The helpers every CUDA source jitc generates starts with (once per program).
#include "inductor/cuda/codegen.h"

namespace jitc::inductor {

namespace {

// Helpers every kernel source starts with: conversions for half and bfloat16 (no CUDA headers needed),
// NaN-propagating max/min, Python's integer division and remainder, integer pow, block reductions.
constexpr const char* kPrelude = R"(
struct Symbols { long long v[16]; };
__device__ __forceinline__ float half_to_float(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short float_to_half(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float bf16_to_float(unsigned short b) { return __int_as_float(((unsigned int)b) << 16); }
// Round to nearest even, as c10::BFloat16 does: one instruction from sm_80 on (its NaN is 0x7FFF where
// c10's is 0x7FC0; both are NaN).
__device__ __forceinline__ unsigned short float_to_bf16(float f) {
#if __CUDA_ARCH__ >= 800
  unsigned short b; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f)); return b;
#else
  if (f != f) return 0x7FC0;
  unsigned int u = __float_as_uint(f);
  return (unsigned short)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
#endif
}
// Full-range division within 2 ulp (what Triton emits for float division); for values rounded to 16 bits.
__device__ __forceinline__ float fast_div(float a, float b) { float q; asm("div.full.f32 %0, %1, %2;" : "=f"(q) : "f"(a), "f"(b)); return q; }
template <class T> __device__ __forceinline__ T max_nan(T a, T b) { return (a > b || a != a) ? a : b; }
template <class T> __device__ __forceinline__ T min_nan(T a, T b) { return (a < b || a != a) ? a : b; }
// A failed kCheck (an index out of range) stops the kernel with a device-side assert, as eager's kernels do
// (CUDA_KERNEL_ASSERT): the launch fails with cudaErrorAssert.
extern "C" __device__ void __assertfail(const char* message, const char* file, unsigned line, const char* function, decltype(sizeof(0)) size);
__device__ __noinline__ void check_failed() { __assertfail("index out of bounds", "jitc kernel", 0, "jitc", 1); }
template <class T> __device__ __forceinline__ T safe_divisor(T b) { return b == 0 ? T(1) : b; }
template <class T> __device__ __forceinline__ T floor_div_int(T a, T b) {
  b = safe_divisor(b); T q = a / b, r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
template <class T> __device__ __forceinline__ T rem_int(T a, T b) {
  b = safe_divisor(b); T r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <class T> __device__ __forceinline__ T rem_float(T a, T b) {
  T r = fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <class T> __device__ __forceinline__ T pow_int(T base, T e) {
  if (e < 0) return base == 1 ? T(1) : base == -1 ? ((e & 1) ? T(-1) : T(1)) : T(0);
  T result = 1;
  while (e) { if (e & 1) result *= base; base *= base; e >>= 1; }
  return result;
}
template <class T> __device__ __forceinline__ T sign_of(T a) { return T((T(0) < a) - (a < T(0))); }
// Every thread gets the combination of every thread's value: a butterfly of shuffles gives each lane its
// warp's total, and every warp then combines the warps' totals the same way (not warp 0 alone, then a
// broadcast through shared memory: no shuffles under a branch, one barrier less). On the H100 host, NVRTC
// compiled x.var()'s partial pass faster so, with kernel times unchanged (benchmarks/RESULTS.md,
// session 10). Lanes combine in different orders, so a max over both +0 and -0 may return either sign.
template <class T, class F> __device__ T block_reduce(T v, F f, T identity) {
  __shared__ T shared[32];
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31;
  __syncthreads();  // an earlier call is done reading `shared`
  if (lane == 0) shared[threadIdx.x >> 5] = v;
  __syncthreads();
  v = lane < (blockDim.x >> 5) ? shared[lane] : identity;
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// sincos out of line: its slow path (the reduction of huge arguments) is large, and a vector group's
// lanes would inline it once each. On the H100 host, cold NVRTC (no driver cache) of (sin+cos).relu was
// much faster with it out of line, and the kernel ran at the same speed. The pair returns by value:
// through pointers, a call that is not inlined puts its results in local memory, which measured much
// slower (benchmarks/RESULTS.md, session 6).
struct SinCos { float s, c; };
struct SinCosD { double s, c; };
__device__ __noinline__ SinCos sincos_out_of_line(float x) { SinCos r; sincosf(x, &r.s, &r.c); return r; }
__device__ __noinline__ SinCosD sincos_out_of_line(double x) { SinCosD r; sincos(x, &r.s, &r.c); return r; }
// Programmatic dependent launch (sm_90+; no-ops on older GPUs and in kernels launched without it): each
// kernel lets the stream's next kernel launch once all its blocks have started, and waits until the
// previous kernel has completed and its writes are visible before it touches memory. The next kernel's
// launch latency then hides behind this one's last blocks (and a split reduction's final pass behind
// its partial pass).
__device__ __forceinline__ void let_dependents_launch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}
__device__ __forceinline__ void wait_for_previous_grid() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// Welford's (count, mean, M2) for variances split over blocks.
template <class T> struct Welford { T n, mean, m2; };
// A thread's share of a split variance: its values' deviations from the first of them (the shift, read
// before the loop), summed and squared (the shifted-data algorithm: three operations per value where
// Welford's update divides; the count is an integer, which the unrolled group loop adds up at once).
template <class T> struct ShiftedSums { T shift, sum, squares; int n; };
template <class T> __device__ __forceinline__ void shifted_add(ShiftedSums<T>& s, T x) {
  const T d = x - s.shift;
  s.sum += d;
  s.squares += d * d;
  s.n += 1;
}
// A block's shifted sums combined into its (count, mean, M2), the count n known (the slice's length): the
// mean from the sum of n * shift + sum, then each thread's squared deviations re-centred on that mean,
// squares + 2 (shift - mean) sum + n (shift - mean)^2 (no division per thread). Since a thread's shift
// is one of its values, each term is at most about 2n times that thread's share of M2: the cancellation
// costs about as many roundings as a float sum of n values. Two plain block sums in a fixed order.
template <class T> __device__ Welford<T> block_variance(ShiftedSums<T> s, T n) {
  const auto add = [](const T a, const T b) { return a + b; };
  const T count = T(s.n), mean = n > T(0) ? block_reduce(count * s.shift + s.sum, add, T(0)) / n : T(0), d = s.shift - mean;
  const T m2 = block_reduce(s.squares + T(2) * d * s.sum + count * d * d, add, T(0));
  return Welford<T>{n, mean, m2 > T(0) ? m2 : T(0)};
}
// The final pass of a split variance: a row's S slices (mean, count and M2 of slice s at means[s],
// counts[s], m2s[s], workspace slots of 8 bytes), n elements in all: the mean from the sum of
// count * mean, then the M2s plus each slice's count times its mean's squared deviation from that mean
// (Chan et al.'s formula with the combined mean known). Two plain block sums in a fixed order.
// Each of the THREADS threads loads its slices at once (one memory latency before the block sums).
template <class T, int S, int THREADS>
__device__ Welford<T> combine_slices(const long long* means, const long long* counts, const long long* m2s, T n) {
  constexpr int kPerThread = (S + THREADS - 1) / THREADS;
  const auto add = [](const T a, const T b) { return a + b; };
  const auto at = [](const long long* slots, int s) { return s < S ? *(const T*)(slots + s) : T(0); };
  T count[kPerThread], mean_of[kPerThread], m2_of[kPerThread], total = T(0), m2 = T(0);
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int s = threadIdx.x + j * THREADS;
    count[j] = at(counts, s), mean_of[j] = at(means, s), m2_of[j] = at(m2s, s);
    total += count[j] * mean_of[j];
  }
  const T mean = n > T(0) ? block_reduce(total, add, T(0)) / n : T(0);
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const T d = mean_of[j] - mean;
    m2 += m2_of[j] + count[j] * d * d;
  }
  return Welford<T>{n, mean, block_reduce(m2, add, T(0))};
}
// argmax / argmin: (value, position) pairs; a strictly better value or a first NaN wins, ties keep the
// lower position (ATen's first occurrence).
template <class T> __device__ __forceinline__ bool arg_better(bool max, T v, long long i, T w, long long j) {
  if (v != v || w != w) return (v != v && w == w) || (v != v && w != w && i < j);
  if (v == w) return i < j;
  return max ? v > w : v < w;
}
// The winning position; its value too through `winner` (split reductions keep both).
template <class T> __device__ long long block_arg_reduce(bool max, T v, long long i, T* winner = nullptr) {
  __shared__ T values[32];
  __shared__ long long positions[32];
  for (int o = 16; o > 0; o >>= 1) {
    T w = __shfl_down_sync(0xffffffffu, v, o); long long j = __shfl_down_sync(0xffffffffu, i, o);
    if (arg_better(max, w, j, v, i)) { v = w; i = j; }
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) { values[warp] = v; positions[warp] = i; }
  __syncthreads();
  if (warp == 0) {
    const bool live = threadIdx.x < (blockDim.x >> 5);
    v = live ? values[lane] : v; i = live ? positions[lane] : (long long)1 << 62;
    for (int o = 16; o > 0; o >>= 1) {
      T w = __shfl_down_sync(0xffffffffu, v, o); long long j = __shfl_down_sync(0xffffffffu, i, o);
      if (arg_better(max, w, j, v, i)) { v = w; i = j; }
    }
    if (threadIdx.x == 0) { positions[0] = i; values[0] = v; }
  }
  __syncthreads();
  if (winner) *winner = values[0];
  return positions[0];
}
// Rows side by side: the threads of a row are those with the same threadIdx.x % C; each gets the
// combination of their values, taken in thread order.
template <int C, class T, class F> __device__ T column_reduce(T v, F f, T identity) {
  __shared__ T shared[1024];
  __syncthreads();  // an earlier reduction of this type is done reading
  shared[threadIdx.x] = v;
  __syncthreads();
  v = shared[threadIdx.x % C];
  for (int t = threadIdx.x % C + C; t < blockDim.x; t += C) v = f(v, shared[t]);
  return v;
}
template <int C, class T> __device__ long long column_arg_reduce(bool max, T v, long long i) {
  __shared__ T values[1024];
  __shared__ long long positions[1024];
  __syncthreads();
  values[threadIdx.x] = v; positions[threadIdx.x] = i;
  __syncthreads();
  v = values[threadIdx.x % C]; i = positions[threadIdx.x % C];
  for (int t = threadIdx.x % C + C; t < blockDim.x; t += C)
    if (arg_better(max, values[t], positions[t], v, i)) { v = values[t]; i = positions[t]; }
  return i;
}
)";

}  // namespace

std::string cuda_prelude() { return kPrelude; }

}  // namespace jitc::inductor
