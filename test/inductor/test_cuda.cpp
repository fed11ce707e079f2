// The CUDA backend on a GPU ([cuda]: skipped without one): parity with eager for the lowered ops across
// dtypes, reductions and normalizations, non-contiguous inputs, dynamic dims, several threads and streams,
// the random differential test's programs (random_graphs.h), and programs whose functions compile apart.
#include "graph/passes.h"
#include "inductor/cuda/codegen.h"
#include "inductor/op_lists.h"
#include "inductor/random_graphs.h"
#include "inductor/scheduler.h"
#include "inductor/cuda/jit.h"
#include "inductor/kernel_serial.h"
#include "runtime/program.h"
#include "support/log_capture.h"
#include "support/parity.h"
#include "support/trace_of.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <thread>

namespace {

using jitc::testing::check_parity;
using jitc::testing::check_parity_reducing;

bool have_gpu() { return at::hasCUDA() && c10::cuda::device_count() > 0; }

// The random test's default budget: fewer graphs than the CPU test's 500, since each one also compiles
// its kernels through NVRTC; JITC_RANDOM_SEEDS=<n> runs more.
constexpr uint32_t kRandomSeeds = 300;

at::Tensor cuda_sample(at::IntArrayRef sizes, c10::ScalarType dtype, int seed) {
  return jitc::testing::sample(sizes, dtype, seed).to(at::kCUDA);
}

}  // namespace

TEST_CASE("CUDA: unary and binary ops match eager across dtypes", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  for (auto dtype : jitc::testing::kAllDtypes) {
    for (const auto& [name, op] : jitc::testing::unary_ops())
      check_parity(std::string(name) + " " + c10::toString(dtype), op, cuda_sample({33, 65}, dtype, 1));
    for (const auto& [name, op] : jitc::testing::binary_ops())
      check_parity(std::string(name) + " " + c10::toString(dtype), op, cuda_sample({33, 65}, dtype, 2), cuda_sample({65}, dtype, 3));
  }
}

TEST_CASE("CUDA: reductions and normalizations match eager", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  for (auto dtype : {at::kFloat, at::kHalf, at::kBFloat16, at::kDouble, at::kInt, at::kLong, at::kBool})
    for (const auto& [name, op] : jitc::testing::reduction_ops())
      check_parity(std::string(name) + " " + c10::toString(dtype), op, cuda_sample({4, 5, 1000}, dtype, 6));
  for (const auto& [name, op] : jitc::testing::reduction_ops())
    check_parity(std::string(name) + " transposed", op, at::randn({300, 5, 4}, at::kCUDA).permute({2, 1, 0}));
  // Reductions over outer dims take rows side by side (column kernels): long columns, a last block of
  // rows only partly filled (3 * 37 rows), several loop steps per thread.
  for (auto dtype : {at::kFloat, at::kHalf, at::kLong})
    for (const auto& [name, op] : jitc::testing::reduction_ops())
      check_parity(std::string(name) + " tall " + c10::toString(dtype), op, cuda_sample({2500, 3, 37}, dtype, 7));
  const auto x = at::randn({64, 768}, at::kCUDA), w = at::randn({768}, at::kCUDA), b = at::randn({768}, at::kCUDA);
  check_parity_reducing("layer_norm", 768, [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) { return at::layer_norm(x, {768}, w, b); }, x, w, b);
  check_parity_reducing("rms_norm", 768, [](const at::Tensor& x, const at::Tensor& w) { return at::rms_norm(x, {768}, w, 1e-6); }, x, w);
  check_parity_reducing("layer_norm half", 768, [](const at::Tensor& x) { return at::layer_norm(x, {768}); }, x.to(at::kHalf));
  check_parity_reducing("softmax bf16", 768, [](const at::Tensor& x) { return at::softmax(x, -1); }, x.to(at::kBFloat16));
}

// Persistent rows move groups of 16 bytes when a group's addresses are aligned and element by element
// otherwise: rows at odd offsets (narrow), rows alternately aligned (a row stride of 1026), a ragged row
// ([16, 1000]: a thread's last group past the row's end); groups of 4 floats, 8 halves, 2 doubles.
TEST_CASE("CUDA: persistent rows read aligned and unaligned rows alike", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  const auto softmax = [](const at::Tensor& x) { return at::softmax(x * 0.5, -1); };
  const auto norm = [](const at::Tensor& x, const at::Tensor& w) { return at::layer_norm(x, {x.size(-1)}, w) + x; };
  for (auto dtype : {at::kFloat, at::kHalf, at::kDouble}) {
    const std::string type = c10::toString(dtype);
    const auto wide = cuda_sample({64, 1030}, dtype, 11), w = cuda_sample({1024}, dtype, 12);
    for (int64_t offset : {0, 1, 2, 3}) {
      check_parity_reducing("softmax at offset " + std::to_string(offset) + " " + type, 1024, softmax, wide.narrow(1, offset, 1024));
      check_parity_reducing("layer_norm at offset " + std::to_string(offset) + " " + type, 1024, norm, wide.narrow(1, offset, 1024), w);
    }
    const auto alternate = cuda_sample({64, 1026}, dtype, 13).narrow(1, 0, 1024);
    check_parity_reducing("softmax of rows alternately aligned " + type, 1024, softmax, alternate);
    check_parity_reducing("layer_norm of rows alternately aligned " + type, 1024, norm, alternate, w);
    check_parity_reducing("softmax of ragged rows " + type, 1000, softmax, cuda_sample({16, 1000}, dtype, 14));
  }
}

// Kernels whose sizes prove their 16-byte groups aligned test no address (test_nvrtc.cpp checks the
// source); an input that starts off a 16-byte boundary is then read from an aligned copy. One program
// serves inputs at any offset: a view at an odd offset, an expanded row at one, then aligned ones again.
TEST_CASE("CUDA: inputs that start off a 16-byte boundary are read from aligned copies", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  const auto fn = [](const at::Tensor& x, const at::Tensor& bias) { return at::softmax((x * 2 + bias).relu(), -1) + x; };
  for (auto dtype : {at::kFloat, at::kHalf}) {
    const auto base = cuda_sample({64 * 1024 + 8}, dtype, 21), bias_base = cuda_sample({1024 + 8}, dtype, 22);
    auto compiled = jitc::compile(fn);
    for (int64_t offset : {0, 1, 3, 0, 5}) {
      INFO(c10::toString(dtype) << " at offset " << offset);
      const auto x = base.narrow(0, offset, 64 * 1024).view({64, 1024});
      const auto bias = bias_base.narrow(0, 8 - offset, 1024).expand({64, 1024});
      const at::Tensor got = compiled(x, bias);
      CHECK(jitc::testing::difference(got, fn(x, bias), jitc::testing::tolerance_for(dtype)) == "");
    }
    CHECK(compiled.stats().programs_compiled == 1);
  }
}

// A thread's groups of a tile loaded before any is computed (groups_per_thread): a last tile that ends
// after a thread's first group or before it, a broadcast load beside the grouped ones, a column slice
// whose groups' alignment is tested at run time, and an odd row length (one group per loop step).
TEST_CASE("CUDA: pointwise kernels that load all of a thread's groups first match eager", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  const auto gelu_bias = [](const at::Tensor& x, const at::Tensor& bias) { return at::gelu(x + bias, "tanh") * x; };
  for (int64_t rows : {3, 5, 64}) {
    const auto x = cuda_sample({rows, 1024 + 512}, at::kFloat, 41), bias = cuda_sample({1024 + 512}, at::kFloat, 42);
    check_parity(fmt::format("gelu of {} rows of 1536 plus a broadcast bias", rows), gelu_bias, x, bias);
  }
  check_parity("sin + cos of 3 x 2560", [](const at::Tensor& x) { return (x.sin() + x.cos()).relu(); },
               cuda_sample({3, 2560}, at::kFloat, 43));
  const auto base = cuda_sample({64, 1029}, at::kFloat, 44);
  check_parity("a column slice at offset 1", [](const at::Tensor& x) { return x.narrow(1, 1, 1028) * 3 + 1; }, base);
  check_parity("rows of 1029", [](const at::Tensor& x) { return x * 3 + 1; }, base);
}

// Long bodies take narrower vector groups (kMaxUnrolledGroupExprs): 4 and 2 halves or bfloat16s per
// access, whole and ragged rows.
TEST_CASE("CUDA: pointwise kernels with long bodies in narrower groups match eager", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  for (int64_t links : {16, 200})
    for (auto dtype : {at::kHalf, at::kBFloat16})
      for (int64_t columns : {1024, 1021}) {
        const auto chain = [links](const at::Tensor& x) {
          auto y = x;
          for (int64_t i = 0; i < links; ++i) y = y * 0.99 + x * 0.01;
          return y;
        };
        check_parity(fmt::format("{} links, {}, rows of {}", links, c10::toString(dtype), columns), chain,
                     cuda_sample({8, columns}, dtype, 45));
      }
}

// More rows than a launch's blocks (kMaxGridBlocks): the kernel loops over them; fewer: one per block.
TEST_CASE("CUDA: kernels with more tiles than a launch's blocks loop over them", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  const auto row_sums = [](const at::Tensor& x) { return x.sum(1) * 2; };
  check_parity("row sums of 2^20 + 5 rows", row_sums, cuda_sample({jitc::inductor::kMaxGridBlocks + 5, 3}, at::kFloat, 31));
  check_parity("row sums of 1000 rows", row_sums, cuda_sample({1000, 3}, at::kFloat, 32));
}

TEST_CASE("CUDA: reductions of few long rows split over blocks match eager", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  // 2^21 + 3 elements in one row, 64 rows of 40000: slices not a multiple of the block, the last one
  // shorter; independent reductions fused into one kernel share the workspace. Floating inputs are
  // positive: a float32 sum of 40000 signed values that ends near zero differs from eager's by more
  // than the relative tolerance in any summation order, and products of that many values over- or
  // underflow at an order-dependent step (prod is left out for the same reason).
  auto long_rows = [](at::IntArrayRef sizes, c10::ScalarType dtype, int seed) {
    if (!c10::isFloatingType(dtype)) return cuda_sample(sizes, dtype, seed);
    at::manual_seed(seed);
    return (at::rand(sizes) + 0.5).to(dtype).to(at::kCUDA);
  };
  for (auto dtype : {at::kFloat, at::kHalf, at::kDouble, at::kLong, at::kBool}) {
    const auto one_row = long_rows({(1 << 21) + 3}, dtype, 8), rows = long_rows({64, 40000}, dtype, 9);
    for (const auto& [name, op] : jitc::testing::reduction_ops()) {
      if (std::string(name) == "prod") continue;
      // Eager's float16 logsumexp stores the sum of 2^21 exps (about 10^6) as float16 before its log:
      // inf. jitc keeps the sum in float32 (as Inductor does) and returns the finite logsumexp.
      const bool half_sum_overflows = std::string(name) == "logsumexp" && dtype == at::kHalf;
      if (!half_sum_overflows) check_parity(std::string(name) + " one long row " + c10::toString(dtype), op, one_row);
      check_parity(std::string(name) + " 64 long rows " + c10::toString(dtype), op, rows);
    }
  }
  // Column kernels split over blocks: rows side by side in each block (300 rows: a last group partly
  // filled), slices of 20000 reduced elements; mean's division and any's bools after the slices combine.
  for (auto dtype : {at::kFloat, at::kHalf, at::kDouble}) {
    const auto tall = long_rows({20000, 300}, dtype, 10);
    check_parity(std::string("column mean + amax ") + c10::toString(dtype), [](const at::Tensor& x) { return x.mean(0) + x.amax(0); }, tall);
    check_parity(std::string("column any ") + c10::toString(dtype), [](const at::Tensor& x) { return (x > 1.49).any(0); }, tall);
  }
  check_parity("sum + argmax + amin", [](const at::Tensor& x) { return x.sum() + x.argmax() + x.amin(); }, at::randn({3000, 1000}, at::kCUDA));
  check_parity("mean of squares", [](const at::Tensor& x) { return (x * x).mean(); }, at::randn({4096, 1024}, at::kCUDA));
  // Variances split over blocks (Welford partials): values far from zero, a whole tensor, var_mean.
  const auto offset = at::randn({1 << 21}, at::kCUDA) + 1000;
  check_parity("var of values near 1000", [](const at::Tensor& x) { return x.var(); }, offset);
  // A thread's shifted sums (shifted_add) take its first value as the shift: some of them outliers here.
  const at::Tensor outliers = offset.clone();
  outliers.slice(0, 0, outliers.size(0), 2048).fill_(1e4);
  check_parity("var of values near 1000 with outliers", [](const at::Tensor& x) { return x.var(); }, outliers);
  check_parity("var of doubles near 1000 with outliers", [](const at::Tensor& x) { return x.var(); }, outliers.to(at::kDouble));
  check_parity("std of a whole matrix", [](const at::Tensor& x) { return x.std(); }, at::randn({2048, 1024}, at::kCUDA));
  check_parity("var_mean of long rows", [](const at::Tensor& x) { auto [v, m] = at::var_mean(x, {1}, 0); return v * 10 + m; },
               at::randn({3, 100003}, at::kCUDA) * 3 + 1);
}

// Reductions of one space that do not read each other fold in one loop (merge_reduction_loops.h): a batch
// norm's backward sums per channel (a block per channel, slices of a channel over blocks in vector groups,
// channels side by side in channels-last, a ragged shape), a layer norm's backward sums per row
// (persistent rows, looped rows, rows split over blocks), sums beside extrema and an argmax (which keeps
// its own loop), and the batch norm's sums over a dynamic batch.
TEST_CASE("CUDA: reductions sharing a loop match eager", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  const auto channel_sums = [](const at::Tensor& x, const at::Tensor& dy, const at::Tensor& mean) {
    const at::Tensor masked = at::threshold_backward(dy, x, 0);
    return at::cat({masked.sum({0, 2, 3}), ((x - mean.view({1, -1, 1, 1})) * masked).sum({0, 2, 3})});
  };
  for (auto dtype : {at::kFloat, at::kBFloat16})
    for (const auto& [shape, layout] : {std::make_pair(std::vector<int64_t>{4, 16, 10, 10}, at::MemoryFormat::Contiguous),
                                        std::make_pair(std::vector<int64_t>{32, 4, 64, 64}, at::MemoryFormat::Contiguous),
                                        std::make_pair(std::vector<int64_t>{8, 16, 32, 32}, at::MemoryFormat::ChannelsLast),
                                        std::make_pair(std::vector<int64_t>{3, 5, 7, 9}, at::MemoryFormat::Contiguous)}) {
      const at::Tensor x = cuda_sample(shape, dtype, 21).contiguous(layout), dy = cuda_sample(shape, dtype, 22).contiguous(layout);
      const at::Tensor mean = cuda_sample({shape[1]}, dtype, 23);
      check_parity_reducing(fmt::format("channel sums {} {} {}", shape[0], shape[1], c10::toString(dtype)), x.numel() / shape[1], channel_sums, x,
                            dy, mean);
    }
  const auto row_sums = [](const at::Tensor& x, const at::Tensor& dy, const at::Tensor& w) {
    const at::Tensor g = dy * w;
    return at::cat({g.sum(-1), (g * x).sum(-1)});
  };
  for (const auto& rows : {std::vector<int64_t>{64, 768}, std::vector<int64_t>{64, 5000}, std::vector<int64_t>{2, 100003}}) {
    const at::Tensor x = cuda_sample(rows, at::kFloat, 24), dy = cuda_sample(rows, at::kFloat, 25), w = cuda_sample({rows[1]}, at::kFloat, 26);
    check_parity_reducing(fmt::format("row sums {}", rows[1]), rows[1], row_sums, x, dy, w);
  }
  const auto mixed = [](const at::Tensor& x) { return x.sum(-1) + x.amax(-1) + (x * x).amin(-1) + x.argmax(-1); };
  for (const auto& rows : {std::vector<int64_t>{64, 768}, std::vector<int64_t>{4, 5000}})
    check_parity_reducing(fmt::format("sums, extrema and argmax {}", rows[1]), rows[1], mixed, cuda_sample(rows, at::kFloat, 27));
  auto compiled = jitc::compile(channel_sums);
  for (int64_t batch : {3, 5, 7, 64}) {
    INFO("dynamic batch " << batch);
    const at::Tensor x = cuda_sample({batch, 16, 8, 8}, at::kFloat, 28), dy = cuda_sample({batch, 16, 8, 8}, at::kFloat, 29);
    const at::Tensor mean = cuda_sample({16}, at::kFloat, 30);
    CHECK(jitc::testing::difference(compiled(x, dy, mean), channel_sums(x, dy, mean), jitc::testing::reduction_tolerance(at::kFloat, batch * 64)) ==
          "");
  }
}

TEST_CASE("CUDA: views, broadcasts and non-contiguous inputs", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  const auto a = at::randn({60, 50}, at::kCUDA), wide = at::randn({50, 60}, at::kCUDA);
  for (const auto& [name, op] : jitc::testing::binary_ops()) {
    check_parity(std::string(name) + " transposed", op, a, wide.t());
    check_parity(std::string(name) + " sliced", op, at::randn({90, 110}, at::kCUDA).slice(0, 10, 70).slice(1, 2, 102, 2), a);
  }
  check_parity("cat pad", [](const at::Tensor& x) { return at::constant_pad_nd(at::cat({x, x.exp()}, 1), {1, 2}); }, a);
}

// A BatchNorm's step: its counter incremented, its running statistics updated. A 0-dim update fused into a
// kernel over the channels is computed per block; it must not be read and written in place there.
TEST_CASE("CUDA: a counter and running statistics updated in place beside wider kernels match eager", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  auto step = [](const at::Tensor& x, const at::Tensor& counter, const at::Tensor& mean, const at::Tensor& var) {
    const at::Tensor out = at::batch_norm(x, {}, {}, mean, var, /*training=*/true, 0.1, 1e-5, /*cudnn_enabled=*/true) * 2;
    counter.add_(1);
    return out;
  };
  for (const int64_t channels : {16, 1280, 4096}) {
    INFO(channels << " channels");
    const at::Tensor x = at::randn({4, channels, 3, 3}, at::kCUDA);
    at::Tensor counter = at::zeros({}, at::TensorOptions().dtype(at::kLong).device(at::kCUDA)), mean = at::zeros({channels}, at::kCUDA),
               var = at::ones({channels}, at::kCUDA);
    at::Tensor eager_counter = counter.clone(), eager_mean = mean.clone(), eager_var = var.clone();
    auto compiled = jitc::compile(step);
    for (int call = 0; call < 3; ++call) {
      CHECK(at::allclose(compiled(x, counter, mean, var), step(x, eager_counter, eager_mean, eager_var), 1e-4, 1e-4));
      CHECK(counter.item<int64_t>() == eager_counter.item<int64_t>());
      CHECK(at::allclose(mean, eager_mean, 1e-5, 1e-5));
      CHECK(at::allclose(var, eager_var, 1e-5, 1e-5));
    }
  }
  auto count = [](const at::Tensor& counter, const at::Tensor& y) {
    const at::Tensor out = y * 2;
    counter.add_(1);
    return out;
  };
  at::Tensor counter = at::zeros({}, at::TensorOptions().dtype(at::kLong).device(at::kCUDA)), eager_counter = counter.clone();
  const at::Tensor y = at::randn({1 << 20}, at::kCUDA);
  auto counted = jitc::compile(count);
  for (int call = 0; call < 3; ++call) {
    CHECK(at::equal(counted(counter, y), count(eager_counter, y)));
    CHECK(counter.item<int64_t>() == eager_counter.item<int64_t>());
  }
}

TEST_CASE("CUDA: one compiled program serves every size of a dynamic dim", "[cuda][dynamic]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  auto f = jitc::compile([](const at::Tensor& x) { return at::softmax(x * 2, -1) + 1; });
  f(at::randn({3, 1000}, at::kCUDA));
  f(at::randn({5, 1000}, at::kCUDA));
  for (int64_t rows : {4, 7, 130}) {
    const auto x = at::randn({rows, 1000}, at::kCUDA);
    f(x);
    CHECK(jitc::testing::difference(f(x), at::softmax(x * 2, -1) + 1, {1e-5, 1e-5}) == "");
  }
  CHECK(f.stats().programs_compiled == 1);
  CHECK(f.stats().kernels_compiled == 1);
}

// Reductions over a dynamic dim split over blocks (split_count's nominal size), the slices' bounds from the
// size at run time: at every size, small ones whose last slices are empty included, eager's results. A
// batch norm's statistics over a dynamic batch (a variance over a symbolic count: Welford's partials) and
// column sums over dynamic rows.
TEST_CASE("CUDA: reductions over a dynamic dim split over blocks at every size", "[cuda][dynamic]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  const std::function<at::Tensor(const at::Tensor&)> statistics = [](const at::Tensor& x) {
    return at::rsqrt(x.var({0, 2, 3}, false) + 1e-5) + x.mean({0, 2, 3});
  };
  const std::function<at::Tensor(const at::Tensor&)> column_sums = [](const at::Tensor& x) { return x.sum(0) + x.amax(0); };
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    for (const auto& [fn, inner, sizes] : {std::make_tuple(statistics, std::vector<int64_t>{16, 32, 32}, std::vector<int64_t>{2, 4, 7, 64, 300}),
                                           std::make_tuple(column_sums, std::vector<int64_t>{300}, std::vector<int64_t>{2, 4, 9, 5000, 40000})}) {
      jitc::testing::LogCapture logs("schedule");
      auto f = jitc::compile(fn);
      auto sample = [&, &inner = inner](int64_t batch, int seed) {
        std::vector<int64_t> shape{batch};
        shape.insert(shape.end(), inner.begin(), inner.end());
        return cuda_sample(shape, dtype, seed);
      };
      f(sample(3, 1));
      f(sample(5, 2));
      for (int64_t batch : sizes) {
        INFO(c10::toString(dtype) << " batch " << batch << " of " << inner.size() + 1 << " dims");
        const at::Tensor x = sample(batch, static_cast<int>(batch));
        f(x);  // a new size's own trace first (the size ledger), then the symbolic program
        CHECK(jitc::testing::difference(f(x), fn(x), jitc::testing::reduction_tolerance(dtype, x.numel() / x.size(1))) == "");
      }
      CHECK(f.stats().programs_compiled == 1);
      CHECK(logs.contains(", split "));
    }
  }
}

// Views from the end of the dynamic dim start at a storage offset computed from the size at run time; a
// split's dynamic last piece starts after the constant one; arange and full take the size as a value.
TEST_CASE("CUDA: views from the end of a dynamic dim and factories sized by it take one compile", "[cuda][dynamic]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  auto fn = [](const at::Tensor& x) {
    const auto pieces = x.split_with_sizes({2, x.size(0) - 2});
    return x.slice(0, -2) * 2 + x.select(0, -1) + pieces[1].sum(0, true) - pieces[0].amax(0, true) +
           at::arange(x.size(0), x.size(0) + x.size(1), x.options()) * at::full({1}, x.size(0), x.options());
  };
  jitc::testing::LogCapture logs("perf_hints,fusion");
  auto f = jitc::compile(fn);
  f(at::randn({3, 700}, at::kCUDA));
  f(at::randn({5, 700}, at::kCUDA));
  for (int64_t rows : {2, 4, 9, 131}) {
    const auto x = at::randn({rows, 700}, at::kCUDA);
    f(x);
    INFO("rows " << rows);
    CHECK(jitc::testing::difference(f(x), fn(x), jitc::testing::reduction_tolerance(at::kFloat, rows)) == "");
  }
  CHECK(f.stats().programs_compiled == 1);
  CHECK(jitc::testing::unlowered_ops(logs) == std::vector<std::string>{});
}

TEST_CASE("CUDA: kernels run on the caller's current stream, from several threads", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  auto f = jitc::compile([](const at::Tensor& x) { return (x.sin() * 2).relu() + x.sum(-1, true); });
  const auto warm = at::randn({256, 512}, at::kCUDA);
  f(warm);
  f(warm);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      auto stream = c10::cuda::getStreamFromPool();
      c10::cuda::CUDAStreamGuard guard(stream);
      for (int i = 0; i < 20; ++i) {
        const auto x = at::randn({256, 512}, at::kCUDA);
        const auto got = f(x);
        if (!jitc::testing::difference(got, (x.sin() * 2).relu() + x.sum(-1, true), {1e-5, 1e-4}).empty()) mismatches++;
      }
      stream.synchronize();
    });
  for (auto& th : threads) th.join();
  CHECK(mismatches == 0);
}

// Each kernel launches while the stream's previous one may still run (programmatic dependent launch)
// and waits for it before touching memory. A chain of compiled calls on large inputs, each reading the
// previous one's output (a pointwise kernel, a row kernel, a split reduction), with intermediates freed at
// once so that the caching allocator hands their memory to the next outputs while kernels that read
// it may still be running. The eager chain runs afterwards, so no ATen kernel separates jitc's.
TEST_CASE("CUDA: kernels that overlap the previous launch read what it wrote", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  auto scale = [](const at::Tensor& x) { return x * 1.5 + 0.25; };
  auto normalize = [](const at::Tensor& x) { return at::softmax(x, -1) * 4096 + x.sum(-1, true) * 1e-4; };
  auto total = [](const at::Tensor& x) { return x.sum() * 1e-7 + x.select(0, 0); };
  auto scale_c = jitc::compile(scale), normalize_c = jitc::compile(normalize), total_c = jitc::compile(total);
  const auto x = at::randn({2048, 4096}, at::kCUDA);
  const auto chain = [&](auto&& s, auto&& n, auto&& t) {
    std::vector<at::Tensor> rows;
    at::Tensor a = x;
    for (int i = 0; i < 6; ++i) {
      at::Tensor b = s(a);
      a = n(b);
      b.reset();
      rows.push_back(t(a));
    }
    return rows;
  };
  chain(scale_c, normalize_c, total_c);  // compile first: the chain below only launches
  c10::cuda::device_synchronize();
  const auto got = chain(scale_c, normalize_c, total_c);
  const auto want = chain(scale, normalize, total);
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("link " << i);
    CHECK(jitc::testing::difference(got[i], want[i], {1e-4, 1e-3}).empty());
  }
}

// Inputs on either GPU of a two-GPU host, while the other one is current: kernels load into the inputs'
// device's context and launch on its current stream (a pool stream of device 1 included); a split
// reduction's workspace and reduce-overhead's CUDA graphs on device 1 too. The device is guarded: each
// one gets a program of its own.
TEST_CASE("CUDA: programs run on their inputs' device, whichever device is current", "[cuda][multi_gpu]") {
  if (!have_gpu() || c10::cuda::device_count() < 2) {
    WARN("fewer than two CUDA devices: skipped");
    return;
  }
  const auto fn = [](const at::Tensor& x, const at::Tensor& w) { return at::layer_norm(x, {512}, w) + x.sum(0).sin() + x.mean(); };
  jitc::Options graphs;
  graphs.mode = jitc::Mode::kReduceOverhead;
  for (const auto& options : {jitc::Options{}, graphs}) {
    auto f = jitc::compile(fn, options);
    for (int index : {1, 0, 1}) {
      const c10::Device device(at::kCUDA, index);
      const auto x = at::randn({300, 512}, device), w = at::randn({512}, device);
      const c10::cuda::CUDAStreamGuard on_pool(c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(index)));
      const c10::cuda::CUDAGuard other_current(static_cast<c10::DeviceIndex>(1 - index));  // after: the stream guard sets it
      const auto want = fn(x, w);
      for (int call = 0; call < 3; ++call) {
        const auto got = f(x, w);
        INFO("device " << index << ", call " << call << ", mode " << jitc::to_string(options.mode));
        CHECK(got.device() == device);
        CHECK(jitc::testing::difference(got, want, {1e-5, 1e-4}) == "");
      }
    }
    CHECK(f.stats().programs_compiled == 2);
    CHECK(f.stats().eager_fallbacks == 0);
  }
}

// The CPU random test's programs, on the same input values moved to the GPU: compiled vs eager on CUDA,
// with the CPU test's tolerance. A failure prints the program and its seed (replay with
// JITC_RANDOM_SEED=<seed> ./test_cuda "[random]").
TEST_CASE("CUDA: random graphs of pointwise reduction and view ops match eager", "[cuda][random]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  using namespace jitc::testing::random_graphs;
  const auto [first, end] = seed_range(kRandomSeeds);
  for (uint32_t seed = first; seed < end; ++seed) check_compiled_vs_eager(generate(seed, Normalizations::kLastDim), at::Device(at::kCUDA, 0));
  // With in-place writes into the programs' own values (slice_scatter and select_scatter kernels).
  for (uint32_t seed = first; seed < end; ++seed)
    check_compiled_vs_eager(generate(seed, Normalizations::kLastDim, InPlace::kIntermediates), at::Device(at::kCUDA, 0));
}

TEST_CASE("CUDA: group_norm is lowered: a statistics kernel, then the output's", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  auto fn = [](const at::Tensor& x, const at::Tensor& g, const at::Tensor& b) { return at::group_norm(x, 4, g, b) + x; };
  const auto img = cuda_sample({4, 32, 16, 16}, at::kFloat, 40), gamma = cuda_sample({32}, at::kFloat, 41), beta = cuda_sample({32}, at::kFloat, 42);
  for (auto dtype : {at::kFloat, at::kHalf, at::kBFloat16}) {
    const std::string type = c10::toString(dtype);
    jitc::testing::LogCapture logs("perf_hints,fusion");
    const auto x = img.to(dtype), g = gamma.to(dtype), b = beta.to(dtype);
    if (dtype == at::kFloat) {
      check_parity_reducing("group_norm " + type, 8 * 16 * 16, fn, x, g, b);  // each group reduces 8 channels of 16 x 16
    } else {
      // Eager's CUDA kernel is less exact in half and bfloat16 than one rounding of the float32 result,
      // which jitc computes (measured: 0.096 off the float64 result at -16.3 in bfloat16, where a step is
      // 0.125); after the + x that follows, the two can be two steps apart. Both are compared with float64.
      const at::Tensor exact = fn(x.to(at::kDouble), g.to(at::kDouble), b.to(at::kDouble));
      auto compiled = jitc::compile(fn);
      compiled(x, g, b);
      const double jitc_error = (compiled(x, g, b).to(at::kDouble) - exact).abs().max().item<double>();
      const double eager_error = (fn(x, g, b).to(at::kDouble) - exact).abs().max().item<double>();
      INFO("group_norm " << type << ": error against float64 of jitc " << jitc_error << ", of eager " << eager_error);
      CHECK(jitc_error <= eager_error);
      CHECK(compiled.stats().programs_compiled == 1);
    }
    CHECK(jitc::testing::unlowered_ops(logs) == std::vector<std::string>{});
  }
}

TEST_CASE("CUDA: max-autotune times candidate block sizes and keeps the fastest", "[cuda][autotune]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  jitc::testing::LogCapture logs("perf_hints");
  auto fn = [](const at::Tensor& x) { return at::softmax(x * 0.125, -1) + x.sum(-1, true); };
  // Positive values: sums far from zero, so that the candidates' different summation orders stay within
  // float32's relative tolerance (sums of 2048 signed values near zero differ by more in any order).
  const auto x = at::rand({512, 2048}, at::kCUDA);
  const auto want = fn(x);
  for (auto mode : {jitc::Mode::kMaxAutotuneNoCudagraphs, jitc::Mode::kMaxAutotune}) {
    jitc::Options options;
    options.mode = mode;
    auto f = jitc::compile(fn, options);
    for (int call = 0; call < 4; ++call) {
      INFO(jitc::to_string(mode) << " call " << call);
      CHECK(jitc::testing::difference(f(x), want, jitc::testing::tolerance_for(at::kFloat)) == "");
    }
    CHECK(f.stats().programs_compiled == 1);
    CHECK((f.stats().cudagraph_replays > 0) == (mode == jitc::Mode::kMaxAutotune));  // max-autotune uses CUDA graphs
  }
  CHECK(logs.contains("AUTOTUNE "));
  CHECK(logs.contains("(kept "));
}

TEST_CASE("CUDA: a graph's functions compile as NVRTC programs of their own and load back from the payload", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  // Four functions: the row sums, x.var() of the whole tensor as a partial and a final pass, the add.
  auto f = [](const at::Tensor& x) { return x.var() + (x * 2).sum(1); };
  const at::Tensor x = at::randn({512, 4096}, at::kCUDA);
  const auto outcome = jitc::testing::trace_of(f, x);
  const auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(outcome.graph));
  const auto code = jitc::runtime::ProgramCode::compile(jitc::inductor::schedule(g, "multi", {}), "multi", false, true);
  REQUIRE(code->units.size() == 1);
  const std::string images = code->units[0].binary->serialize();
  jitc::inductor::Reader reader(images);
  CHECK(reader.number() == 4);  // CudaBinary: the image count first
  const auto reloaded = jitc::runtime::ProgramCode::deserialize(code->serialize(), "multi");
  REQUIRE(reloaded);
  CHECK(reloaded->units[0].binary->serialize() == images);
  const at::Tensor expected = f(x);
  for (const auto& program_code : {code, reloaded}) {
    const jitc::runtime::Program program(g, program_code);
    std::vector<at::Tensor> values(g.values.size());
    for (const auto& in : g.inputs) values[in.value] = in.kind == jitc::graph::InputKind::kArgument ? x : in.constant;
    std::string why;
    REQUIRE(program.run(values, nullptr, &why));
    CHECK(at::allclose(values[g.outputs.at(0)], expected, 1e-4, 1e-4));
  }
}

// Repeated layers of one shape, and combos of the same parts, compile once (test_combos.cpp checks the
// printing); here the functions launched for the later ones compute what eager does.
TEST_CASE("CUDA: repeated layers and combos launch the first's compiled function and match eager", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  const auto w = at::randn({64, 64}, at::kCUDA) * 0.1;
  auto layer = [](const at::Tensor& x) { return (x * 2).tanh() + 1; };
  auto layers = [=](const at::Tensor& x) { return layer(at::mm(layer(x), w)); };
  // Four updates, a matmul of each by itself, the same four updates: two combos of the same code.
  auto two_stages = [](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, const at::Tensor& d) {
    auto stage = [](const at::Tensor& t) { return t * 0.9 + 1; };
    auto twice = [&](const at::Tensor& t) { return stage(at::mm(stage(t), stage(t))); };
    return std::vector<at::Tensor>{twice(a), twice(b), twice(c), twice(d)};
  };
  jitc::testing::LogCapture logs("output_code");
  const auto x = at::randn({64, 64}, at::kCUDA);
  auto compiled_layers = jitc::compile(layers);
  compiled_layers(x);  // the first call traces and runs eagerly; code is made at the second
  CHECK(jitc::testing::difference(compiled_layers(x), layers(x), jitc::testing::tolerance_for(at::kFloat)) == "");
  CHECK(compiled_layers.stats().kernels_compiled == 2);
  std::vector<at::Tensor> ts;
  for (int64_t n : {64, 32, 16, 8}) ts.push_back(at::randn({n, n}, at::kCUDA));
  auto compiled_stages = jitc::compile(two_stages);
  compiled_stages(ts[0], ts[1], ts[2], ts[3]);
  const auto got = compiled_stages(ts[0], ts[1], ts[2], ts[3]), want = two_stages(ts[0], ts[1], ts[2], ts[3]);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("output " << i);
    CHECK(jitc::testing::difference(got[i], want[i], jitc::testing::tolerance_for(at::kFloat)) == "");
  }
  CHECK(compiled_stages.stats().programs_compiled == 1);
  CHECK(logs.contains("the same code"));
}

// A device-side assert ends the process's CUDA context, so this case is hidden ([.]) and runs in a process
// of its own (benchmarks/gpu_check.sh runs "[cuda_assert]" after the other [cuda] cases).
TEST_CASE("CUDA: an index out of range in a compiled kernel is a device-side assert, as in eager", "[.][cuda_assert]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  const auto table = at::randn({5, 3}, at::kCUDA);
  auto f = jitc::compile([&table](const at::Tensor& i) { return at::embedding(table, i) * 2; });
  const auto good = at::tensor({0, 4, 2}, at::TensorOptions().dtype(at::kLong).device(at::kCUDA));
  f(good);
  CHECK(at::equal(f(good), at::embedding(table, good) * 2));
  REQUIRE(f.stats().programs_compiled == 1);
  const auto bad = at::tensor({0, 5, 2}, at::TensorOptions().dtype(at::kLong).device(at::kCUDA));
  std::string error;
  try {
    f(bad);
    c10::cuda::device_synchronize();
  } catch (const c10::Error& e) {
    error = e.what_without_backtrace();
  }
  INFO(error);
  CHECK(error.find("device-side assert triggered") != std::string::npos);
}

// Global average pooling and outer products decompose into kernels on the GPU too (composite_decompositions.cpp).
TEST_CASE("CUDA: global average pooling and outer products decompose into kernels", "[cuda]") {
  if (!have_gpu()) {
    WARN("no CUDA device: skipped");
    return;
  }
  auto pool = [](const at::Tensor& x) { return at::adaptive_avg_pool2d(at::relu(x), {1, 1}).flatten(1) * 2; };
  auto outer = [](const at::Tensor& a, const at::Tensor& b) { return at::outer(a.sin(), b) + 1; };
  for (const auto dtype : {at::kFloat, at::kBFloat16}) {
    INFO(dtype);
    jitc::testing::check_lowered_parity("pool of a batch", pool, cuda_sample({8, 64, 7, 7}, dtype, 4));
    jitc::testing::check_lowered_parity("outer", outer, cuda_sample({257}, dtype, 5), cuda_sample({33}, dtype, 6));
  }
  check_parity("pool of a channels-last input", pool, cuda_sample({8, 64, 7, 7}, at::kFloat, 7).contiguous(at::MemoryFormat::ChannelsLast));
}
