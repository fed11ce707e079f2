// When a captured weight should be prepacked for oneDNN (inductor/frozen_weights.h), measured: ATen's own
// call (at::conv2d, at::linear, which pick their kernel per call) against mkldnn::_convolution_pointwise /
// _linear_pointwise on a weight prepacked once, for layer shapes of the model suite and of small models at
// batch 1. Medians of 7 rounds, µs per call, one process. Figures: benchmarks/RESULTS.md (sessions 49, 50).
//
// Usage: OMP_NUM_THREADS=N bench_library_choices [threads]   (threads: at::set_num_threads, default 1)
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

namespace {

using Scalars = c10::List<std::optional<c10::Scalar>>;

template <class F>
double median_us(F&& f, int calls) {
  std::vector<double> rounds;
  for (int r = 0; r < 7; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f();
    rounds.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / calls);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

// Enough calls for about 20 ms of a round at one multiply-add per nanosecond.
int calls_for(double multiply_adds) { return std::clamp(static_cast<int>(2e7 / (multiply_adds + 1)), 5, 2000); }

struct Convolution {
  int64_t batch, in, out, size, kernel, stride, padding, groups;
};

void convolutions() {
  auto& dispatcher = c10::Dispatcher::singleton();
  auto reorder = dispatcher.findSchemaOrThrow("mkldnn::_reorder_convolution_weight", "")
                     .typed<at::Tensor(const at::Tensor&, at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, int64_t, at::OptionalIntArrayRef)>();
  auto pointwise = dispatcher.findSchemaOrThrow("mkldnn::_convolution_pointwise", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&, at::IntArrayRef,
                                         at::IntArrayRef, at::IntArrayRef, int64_t, c10::string_view, Scalars, std::optional<c10::string_view>)>();
  std::printf("%5s %4s %4s %4s %2s %2s %4s | %10s %10s %10s | %8s\n", "batch", "in", "out", "size", "k", "s", "grp", "ATen NCHW", "ATen NHWC",
              "prepacked", "ATen/pk");
  const std::vector<Convolution> shapes = {
      {1, 3, 16, 8, 3, 1, 1, 1},      {1, 16, 16, 8, 3, 1, 1, 1},     {1, 1, 8, 28, 3, 1, 1, 1},       {1, 8, 16, 14, 3, 1, 1, 1},
      {1, 3, 16, 7, 2, 1, 0, 1},      {1, 16, 32, 3, 2, 1, 0, 1},     {1, 3, 32, 32, 3, 1, 1, 1},      {1, 16, 32, 16, 3, 1, 1, 1},
      {1, 32, 32, 16, 3, 1, 1, 1},    {1, 64, 64, 9, 3, 1, 0, 1},     {1, 64, 128, 4, 3, 1, 1, 1},     {1, 32, 64, 32, 3, 1, 1, 1},
      {1, 1, 10, 28, 5, 1, 0, 1},     {1, 4, 32, 84, 8, 4, 0, 1},     {1, 32, 64, 20, 4, 2, 0, 1},     {1, 64, 64, 56, 3, 1, 1, 1},
      {1, 512, 512, 7, 3, 1, 1, 1},   {1, 64, 256, 56, 1, 1, 0, 1},   {1, 960, 960, 7, 3, 1, 1, 960},  {8, 3, 16, 8, 3, 1, 1, 1},
      {8, 16, 16, 8, 3, 1, 1, 1},     {8, 8, 16, 14, 3, 1, 1, 1},     {8, 64, 64, 56, 3, 1, 1, 1},     {8, 512, 512, 7, 3, 1, 1, 1},
  };
  for (const Convolution& c : shapes) {
    const at::Tensor x = at::randn({c.batch, c.in, c.size, c.size}), w = at::randn({c.out, c.in / c.groups, c.kernel, c.kernel});
    const at::Tensor bias = at::randn({c.out}), x_nhwc = x.contiguous(at::MemoryFormat::ChannelsLast);
    const std::vector<int64_t> stride{c.stride, c.stride}, padding{c.padding, c.padding}, dilation{1, 1};
    const at::Tensor packed = reorder.call(w, padding, stride, dilation, c.groups, x.sizes());
    const int64_t out_size = (c.size + 2 * c.padding - c.kernel) / c.stride + 1;
    const int calls = calls_for(double(c.batch) * c.out * (c.in / c.groups) * c.kernel * c.kernel * out_size * out_size);
    const double nchw = median_us([&] { return at::conv2d(x, w, bias, stride, padding, dilation, c.groups); }, calls);
    const double nhwc = median_us([&] { return at::conv2d(x_nhwc, w, bias, stride, padding, dilation, c.groups); }, calls);
    const double prepacked = median_us(
        [&] { return pointwise.call(x_nhwc, packed, bias, padding, stride, dilation, c.groups, "none", Scalars(), std::nullopt); }, calls);
    std::printf("%5lld %4lld %4lld %4lld %2lld %2lld %4lld | %10.1f %10.1f %10.1f | %8.2f\n", (long long)c.batch, (long long)c.in,
                (long long)c.out, (long long)c.size, (long long)c.kernel, (long long)c.stride, (long long)c.groups, nchw, nhwc, prepacked,
                nchw / prepacked);
  }
}

void linears() {
  auto& dispatcher = c10::Dispatcher::singleton();
  auto reorder = dispatcher.findSchemaOrThrow("mkldnn::_reorder_linear_weight", "").typed<at::Tensor(const at::Tensor&, std::optional<int64_t>)>();
  auto pointwise = dispatcher.findSchemaOrThrow("mkldnn::_linear_pointwise", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&, c10::string_view, Scalars,
                                         std::optional<c10::string_view>)>();
  std::printf("\n%5s %5s %5s | %10s %10s | %8s\n", "rows", "in", "out", "ATen", "prepacked", "ATen/pk");
  for (int64_t rows : {1, 32, 512})
    for (auto [in, out] : std::vector<std::pair<int64_t, int64_t>>{{64, 64}, {256, 256}, {256, 768}, {512, 512}, {768, 768}, {768, 3072}}) {
      const at::Tensor x = at::randn({rows, in}), w = at::randn({out, in}), bias = at::randn({out});
      const at::Tensor packed = reorder.call(w, rows);
      const int calls = calls_for(double(rows) * in * out);
      const double aten = median_us([&] { return at::linear(x, w, bias); }, calls);
      const double prepacked = median_us([&] { return pointwise.call(x, packed, bias, "none", Scalars(), std::nullopt); }, calls);
      std::printf("%5lld %5lld %5lld | %10.1f %10.1f | %8.2f\n", (long long)rows, (long long)in, (long long)out, aten, prepacked, aten / prepacked);
    }
}

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(argc > 1 ? std::atoi(argv[1]) : 1);
  c10::InferenceMode inference;
  std::printf("threads %d\n", at::get_num_threads());
  convolutions();
  linears();
}
