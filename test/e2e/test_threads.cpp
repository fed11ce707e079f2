// Several threads calling one compiled function at once, with different shapes and dtypes.
#include "support/parity.h"

#include <atomic>
#include <mutex>
#include <thread>

namespace {

at::Tensor body(const at::Tensor& x, const at::Tensor& w) { return at::softmax(x.matmul(w), -1) * 2 + x.sum(-1, true); }

}  // namespace

TEST_CASE("eight threads calling one compiled function with different shapes all get eager's results", "[threads]") {
  const auto w = at::randn({16, 16});
  auto f = jitc::compile([&w](const at::Tensor& x) { return body(x, w.to(x.scalar_type())); });
  std::atomic<int> mismatches{0}, errors{0};
  std::mutex first_mismatch_mutex;
  std::string first_mismatch;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int i = 0; i < 40; ++i) {
          const int64_t batch = 2 + (t + i) % 8;
          const auto dtype = t % 2 ? at::kDouble : at::kFloat;
          const auto x = at::randn({batch, 16}, dtype);
          const auto expected = body(x, w.to(dtype));
          // The compiled row sum adds 16 terms in another order: float32 agrees to a few ulps of the terms,
          // which is more than a few ulps of a sum near 0 (DESIGN section 9's tolerance for 16 reduced terms).
          const auto tol = jitc::testing::reduction_tolerance(dtype, 16);
          const auto why = jitc::testing::difference(f(x.to(dtype)), expected, tol);
          if (why.empty()) continue;
          std::lock_guard<std::mutex> lock(first_mismatch_mutex);
          if (mismatches++ == 0) first_mismatch = why;
        }
      } catch (...) {
        errors++;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(errors == 0);
  INFO(first_mismatch);
  CHECK(mismatches == 0);
  const auto s = f.stats();
  CHECK(s.calls == 8 * 40);
  CHECK(s.hits + s.eager_fallbacks + s.compiles + s.size_checks == s.calls);
}

TEST_CASE("threads tracing different functions at once do not see each other's ops", "[threads]") {
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto f = jitc::compile([t](const at::Tensor& x) { return x * (t + 1) + t; });
      for (int i = 0; i < 50; ++i) {
        const auto x = at::randn({3 + i % 3});
        if (!at::equal(f(x), x * (t + 1) + t)) mismatches++;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(mismatches == 0);
}
