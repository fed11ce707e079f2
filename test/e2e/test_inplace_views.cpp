// In-place writes through views of arguments and intermediates, overlapping (expanded) arguments and
// empty tensors (issue 23, found by a differential fuzzer). Each case runs on fresh copies of its inputs,
// eagerly and compiled (inductor and the eager backend), over several calls: the first traces, later
// ones replay the compiled program. Results and the full storage of every argument must match eager's.
#include "support/log_capture.h"
#include "support/parity.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <tuple>

namespace {

// Every element of the storage t views, in storage order: writes outside the view count too.
at::Tensor whole_storage(const at::Tensor& t) {
  const int64_t n = static_cast<int64_t>(t.storage().nbytes() / t.element_size());
  return t.as_strided({n}, {1}, 0);
}

template <class Tuple>
std::string compare_args(const Tuple& got, const Tuple& want) {
  std::string out;
  size_t k = 0;
  std::apply(
      [&](const auto&... g) {
        std::apply(
            [&](const auto&... w) {
              ((
                   out +=
                   [&] {
                     const std::string d =
                         jitc::testing::difference(whole_storage(g), whole_storage(w), jitc::testing::tolerance_for(w.scalar_type()));
                     return d.empty() ? std::string() : fmt::format("argument {}: {}; ", k, d);
                   }(),
                   ++k),
               ...);
            },
            want);
      },
      got);
  return out;
}

std::vector<at::Tensor> as_list(const at::Tensor& t) { return {t}; }
template <class... T>
std::vector<at::Tensor> as_list(const std::tuple<T...>& t) {
  return std::apply([](const auto&... x) { return std::vector<at::Tensor>{x...}; }, t);
}

std::string compare_results(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want) {
  if (got.size() != want.size()) return "a different number of results";
  std::string out;
  for (size_t k = 0; k < got.size(); ++k)
    if (auto d = jitc::testing::difference(got[k], want[k], jitc::testing::tolerance_for(want[k].scalar_type())); !d.empty())
      out += fmt::format("result {}: {}; ", k, d);
  return out;
}

// make() returns a tuple of fresh arguments (the same values every time).
template <class F, class Make>
void check_inplace(const std::string& name, F fn, Make make, jitc::Backend backend, int calls = 4) {
  INFO(name << " (backend " << jitc::to_string(backend) << ")");
  jitc::Options options;
  options.backend = backend;
  auto compiled = jitc::compile(fn, options);
  for (int call = 0; call < calls; ++call) {
    INFO("call " << call);
    auto want_args = make();
    std::vector<at::Tensor> want;
    try {
      want = as_list(std::apply(fn, want_args));
    } catch (const std::exception&) {  // eager rejects it: so must the compiled call
      auto got_args = make();
      CHECK_THROWS(std::apply(compiled, got_args));
      continue;
    }
    auto got_args = make();
    std::vector<at::Tensor> got;
    REQUIRE_NOTHROW(got = as_list(std::apply(compiled, got_args)));
    CHECK(compare_results(got, want) == "");
    CHECK(compare_args(got_args, want_args) == "");
  }
}

template <class F, class Make>
void check_both(const std::string& name, F fn, Make make) {
  check_inplace(name, fn, make, jitc::Backend::kInductor);
  check_inplace(name, fn, make, jitc::Backend::kEager);
}

at::Tensor seeded(std::vector<int64_t> sizes, uint64_t seed) {
  at::manual_seed(seed);
  return at::randn(sizes);
}

}  // namespace

TEST_CASE("an in-place op on a narrowed argument, then a permute of the view", "[inplace]") {
  auto fn = [](const at::Tensor& x) {
    auto v = x.narrow(1, 1, 2);
    v.neg_();
    return at::pow(v.permute({3, 1, 0, 2}), -2.0);
  };
  check_both("narrow neg_ permute pow", fn, [] { return std::make_tuple(seeded({3, 4, 5, 6}, 1)); });
}

TEST_CASE("fill_, index_fill_ and copy_ into an expanded argument", "[inplace]") {
  auto make = [] { return std::make_tuple(at::zeros({1, 4}).expand({3, 4}), at::tensor({1}, at::kLong)); };
  using T = const at::Tensor&;
  check_both(
      "fill_", [](T x, T) { return x.fill_(2) * 1; }, make);
  check_both(
      "fill_ then read",
      [](T x, T) {
        x.fill_(2);
        return x + 1;
      },
      make);
  check_both(
      "index_fill_",
      [](T x, T i) {
        x.index_fill_(0, i, 5.0);
        return x * 3;
      },
      make);
  check_both(
      "index_fill_ of columns",
      [](T x, T i) {
        x.index_fill_(1, i, 5.0);
        return x * 3;
      },
      make);
  check_both(
      "select fill_",
      [](T x, T) {
        x.select(0, 2).fill_(4);
        return x - 1;
      },
      make);
  check_both(
      "copy_ of a row",
      [](T x, T) {
        x.copy_(at::arange(4, at::kFloat));
        return x.sum();
      },
      make);
  check_both(
      "copy_ of rows",
      [](T x, T) {
        x.copy_(at::arange(12, at::kFloat).view({3, 4}));
        return x * 1;
      },
      make);
  check_both(
      "zero_ then add_",
      [](T x, T) {
        x.zero_();
        x.add_(1);
        return x * 2;
      },
      make);
  check_both(
      "masked_fill_",
      [](T x, T) {
        x.masked_fill_(at::ones({3, 4}, at::kBool), 3.0);
        return x * 2;
      },
      make);
  auto make_unsqueezed = [] { return std::make_tuple(at::zeros({4}).unsqueeze(1).expand({4, 3}), at::tensor({0, 2}, at::kLong)); };
  check_both(
      "index_fill_ of an unsqueezed expand",
      [](T x, T i) {
        x.index_fill_(0, i, -1.0);
        return x.t() * 3;
      },
      make_unsqueezed);
}

TEST_CASE("an in-place write into an intermediate is kept", "[inplace]") {
  auto make = [] { return std::make_tuple(seeded({4, 3}, 2), seeded({1, 3}, 3)); };
  check_both(
      "slice copy_",
      [](const at::Tensor& x, const at::Tensor& y) {
        auto t = x * 2;
        t.slice(0, 0, 1).copy_(y);
        return t;
      },
      make);
  check_both(
      "masked_fill_",
      [](const at::Tensor& x, const at::Tensor& y) {
        auto t = x * 2;
        t.masked_fill_(t > 0, 0.5);
        return t;
      },
      make);
  check_both(
      "masked_fill_ then a view",
      [](const at::Tensor& x, const at::Tensor& y) {
        auto t = x + y;
        t.masked_fill_(x < 0, -1.0);
        return t.t();
      },
      make);
  check_both(
      "select add_",
      [](const at::Tensor& x, const at::Tensor& y) {
        auto t = x.exp();
        t.select(1, 2).add_(y.view({3})[0]);
        return t;
      },
      make);
  check_both(
      "transpose mul_",
      [](const at::Tensor& x, const at::Tensor& y) {
        auto t = x - 1;
        t.t().mul_(y.t());
        return t;
      },
      make);
}

TEST_CASE("a copy_ into a view of an intermediate, then only views of it", "[inplace]") {
  // A graph whose only write is such a copy_ looked functional (as if the copy_ were a write-back).
  auto make = [] { return std::make_tuple(seeded({4, 3}, 8), seeded({1, 3}, 9)); };
  using T = const at::Tensor&;
  check_both(
      "returned transposed",
      [](T x, T y) {
        auto t = x * 2;
        t.slice(0, 0, 1).copy_(y);
        return t.t();
      },
      make);
  check_both(
      "returned with a view of it",
      [](T x, T y) {
        auto t = x.exp();
        t.select(0, 2).copy_(y.view({3}));
        return std::make_tuple(t.narrow(0, 1, 3), x.t());
      },
      make);
  check_both(
      "copy_ of a whole intermediate",
      [](T x, T y) {
        auto t = x + 1;
        t.copy_(y.expand({4, 3}));
        return t.view({12});
      },
      make);
  check_both(
      "copy_ into an argument's view, then a view of it",
      [](T x, T y) {
        x.narrow(0, 1, 1).copy_(y);
        return x.t();
      },
      make);
}

TEST_CASE("masked_fill_ and index ops into an intermediate", "[inplace]") {
  auto make = [] { return std::make_tuple(seeded({4, 3}, 10), seeded({4, 3}, 11)); };
  using T = const at::Tensor&;
  check_both(
      "masked_fill_ with a computed value",
      [](T x, T y) {
        auto t = x * y;
        t.masked_fill_(y > 0, x.sum());
        return t;
      },
      make);
  check_both(
      "masked_fill_ of a view, returned as a view",
      [](T x, T y) {
        auto t = x - y;
        t.t().masked_fill_(y.t() < 0, 7.0);
        return t.unsqueeze(0);
      },
      make);
  check_both(
      "index_fill_ of an intermediate",
      [](T x, T y) {
        auto t = x.abs();
        t.index_fill_(1, at::arange(2, at::kLong), -3.0);
        return t;
      },
      make);
  check_both(
      "in-place ops in a chain on an intermediate",
      [](T x, T y) {
        auto t = x.clone();
        t.mul_(2).add_(y).clamp_(-1, 1);
        t.narrow(1, 0, 1).zero_();
        return t;
      },
      make);
}

TEST_CASE("as_strided of an argument view with a storage offset after a write", "[inplace]") {
  auto make = [] { return std::make_tuple(seeded({6, 3}, 12).narrow(0, 1, 4)); };
  using T = const at::Tensor&;
  check_both(
      "as_strided with an absolute offset",
      [](T x) {
        x.narrow(0, 0, 2).mul_(-1);
        return x.as_strided({2, 3}, {3, 1}, x.storage_offset() + 3) * 2;
      },
      make);
  check_both(
      "as_strided without an offset",
      [](T x) {
        x.narrow(0, 2, 2).add_(5);
        return x.as_strided({3, 3}, {3, 1}) + 1;
      },
      make);
  auto make_gaps = [] { return std::make_tuple(seeded({5, 6}, 13).narrow(1, 1, 3)); };
  check_both(
      "as_strided of a view with gaps",
      [](T x) {
        x.narrow(0, 0, 2).mul_(-1);
        return x.as_strided({2, 3}, {6, 1}, x.storage_offset() + 6) * 2;
      },
      make_gaps);
  check_both(
      "as_strided of a view with gaps, no offset",
      [](T x) {
        x.narrow(0, 1, 2).mul_(-1);
        return x.as_strided({4, 2}, {6, 2}) * 2;
      },
      make_gaps);
  check_both(
      "as_strided after a whole write of a view with gaps",
      [](T x) {
        x.mul_(-1);
        return x.as_strided({2, 3}, {6, 1}, x.storage_offset() + 6) * 2;
      },
      make_gaps);
  auto make_plain = [] { return std::make_tuple(seeded({4, 3}, 24)); };
  check_both(
      "a write through as_strided after a transposed write",
      [](T x) {
        x.t().mul_(at::arange(4, at::kFloat));
        x.as_strided({2, 2}, {3, 1}, 4).add_(1);
        return x * 2;
      },
      make_plain);
  check_both(
      "a write through as_strided",
      [](T x) {
        x.as_strided({2, 3}, {3, 1}, x.storage_offset() + 3).add_(1);
        return x * 2;
      },
      make);
}

TEST_CASE("an in-place write into a view of an argument with a storage offset", "[inplace]") {
  auto make = [] { return std::make_tuple(seeded({6, 3}, 4).narrow(0, 1, 4)); };
  check_both(
      "narrow add_ then narrow",
      [](const at::Tensor& x) {
        x.narrow(0, 1, 2).add_(1);
        return x.narrow(0, 0, 3) * 2;
      },
      make);
  check_both(
      "select mul_ then transpose",
      [](const at::Tensor& x) {
        x.select(1, 1).mul_(3);
        return x.t() + 1;
      },
      make);
  auto make_t = [] { return std::make_tuple(seeded({5, 6}, 5).t().narrow(0, 2, 3)); };
  check_both(
      "transposed view with offset",
      [](const at::Tensor& x) {
        x.narrow(1, 1, 3).sub_(2);
        return x.narrow(1, 0, 4).exp();
      },
      make_t);
}

TEST_CASE("graphs holding empty tensors", "[inplace]") {
  auto make = [] { return std::make_tuple(at::zeros({0, 3}), seeded({1, 3}, 6)); };
  check_both(
      "broadcast [0,3] with [1,3]", [](const at::Tensor& x, const at::Tensor& y) { return std::make_tuple(x + y, y * 2); }, make);
  check_both(
      "sum over an empty dim", [](const at::Tensor& x, const at::Tensor& y) { return std::make_tuple(x.sum(0) + y, x * y); }, make);
  check_both(
      "cat with an empty part",
      [](const at::Tensor& x, const at::Tensor& y) {
        return at::cat({x, y, x}, 0) * 2;
      },
      make);
  check_both(
      "in-place into an argument beside an empty op",
      [](const at::Tensor& x, const at::Tensor& y) {
        y.add_(x.sum(0));
        return std::make_tuple(x.exp(), y * 2);
      },
      make);
  auto make_cols = [] { return std::make_tuple(at::zeros({3, 0}), seeded({3, 1}, 7)); };
  check_both(
      "row sums of empty rows", [](const at::Tensor& x, const at::Tensor& y) { return std::make_tuple(x * 2, x.sum(1)); }, make_cols);
  check_both(
      "row sums of empty rows into an argument",
      [](const at::Tensor& x, const at::Tensor& y) {
        y.view({3}).copy_(x.sum(1) + 1);
        return x * y;
      },
      make_cols);
}

TEST_CASE("empty tensors beside size-1 ones in one kernel", "[inplace]") {
  using T = const at::Tensor&;
  auto make = [] { return std::make_tuple(at::zeros({0}), seeded({1}, 14)); };
  check_both(
      "[0] and [1] results", [](T x, T y) { return std::make_tuple(x + y, y * 2); }, make);
  check_both(
      "[0] and [1] results, in-place into the [1]",
      [](T x, T y) {
        y.mul_(3);
        return std::make_tuple(x * y, y + 1);
      },
      make);
  check_both(
      "[0] sum beside [1]", [](T x, T y) { return std::make_tuple(x.exp(), x.sum() + y); }, make);
  auto make2 = [] { return std::make_tuple(at::zeros({0, 3}), seeded({1, 3}, 15), seeded({1}, 16)); };
  check_both(
      "[0,3] and [1,1]",
      [](T x, T y, T z) {
        return std::make_tuple(x + y, z.view({1, 1}) * 2, y.sum(1, true));
      },
      make2);
  check_both(
      "[0,3] and [3] and [1]", [](T x, T y, T z) { return std::make_tuple(x * z, y.view({3}) - 1, x.sum(0) * z); }, make2);
  check_both(
      "mean and var over empty", [](T x, T y, T z) { return std::make_tuple(x.mean(0), x.var(0), x.sum(1), y.sum(0)); }, make2);
  check_both(
      "softmax and an empty cat",
      [](T x, T y, T z) {
        return std::make_tuple(at::softmax(x, 1), at::cat({x, x}, 1), at::cat({x, y}, 0).sum(0));
      },
      make2);
  auto make3 = [] { return std::make_tuple(at::zeros({2, 0, 3}), seeded({2, 1, 3}, 17), seeded({1, 1, 1}, 18)); };
  check_both(
      "[2,0,3] with [2,1,3]", [](T x, T y, T z) { return std::make_tuple(x + y, y * z, (x + z).sum(1), x.sum(2) + 1); }, make3);
  check_both(
      "in-place into an argument beside [2,0,3]",
      [](T x, T y, T z) {
        y.add_(x.sum(1, true));
        z.mul_(2);
        return std::make_tuple(x * z, y.exp());
      },
      make3);
}

TEST_CASE("an empty value's kernel takes a later size-1 value", "[inplace]") {
  using T = const at::Tensor&;
  auto make = [] { return std::make_tuple(at::zeros({0}), seeded({1}, 19), seeded({2, 0}, 20), seeded({2, 1}, 21)); };
  check_both(
      "[0] then [1]",
      [](T x, T y, T, T) {
        auto a = x + y;
        auto b = y * 2;
        return std::make_tuple(a, b);
      },
      make);
  check_both(
      "[0] then a [1] sum",
      [](T x, T y, T, T) {
        auto a = x.exp();
        auto b = x.sum() + y;
        return std::make_tuple(a, b);
      },
      make);
  check_both(
      "[2,0] then [2,1]",
      [](T, T, T u, T v) {
        auto a = u * v;
        auto b = v + 1;
        auto c = u.sum(1, true) - v;
        return std::make_tuple(a, b, c);
      },
      make);
  check_both(
      "[0] then an in-place write into [1]",
      [](T x, T y, T, T) {
        auto a = x - 1;
        y.mul_(2);
        auto b = y.exp();
        return std::make_tuple(a, b);
      },
      make);
}

TEST_CASE("views and reshapes of empty tensors beside size-1 ones", "[inplace]") {
  using T = const at::Tensor&;
  auto make = [] { return std::make_tuple(at::zeros({0, 3}), seeded({1, 3}, 22), seeded({1, 1}, 23)); };
  check_both(
      "reshape of empty",
      [](T x, T y, T z) {
        auto a = x.reshape({3, 0}).t() + y;
        auto b = z * 2;
        return std::make_tuple(a, b, x.reshape({-1}) + 1);
      },
      make);
  check_both(
      "expand to empty",
      [](T x, T y, T z) {
        auto a = y.expand({0, 3}) * 2;
        auto b = z.expand({1, 3}) + y;
        return std::make_tuple(a, b, a.sum(0));
      },
      make);
  check_both(
      "empty slices",
      [](T x, T y, T z) {
        auto a = y.slice(1, 1, 1) * 3;
        auto b = y.narrow(0, 0, 0) + z;
        auto c = y.select(0, 0) - 1;
        return std::make_tuple(a, b, c, a.sum(), b.sum(0));
      },
      make);
  check_both(
      "empty index_select and embedding",
      [](T x, T y, T z) {
        auto idx = at::zeros({0}, at::kLong).to(at::kLong);
        return std::make_tuple(y.index_select(0, x.sum(1).to(at::kLong)), y * z);
      },
      make);
  check_both(
      "empty write into an argument",
      [](T x, T y, T z) {
        x.add_(y);
        y.narrow(1, 0, 0).fill_(5);
        z.add_(x.sum());
        return std::make_tuple(x.t(), y * z);
      },
      make);
}

TEST_CASE("in-place writes through views at changing sizes (symbolic entries)", "[inplace]") {
  auto fn = [](const at::Tensor& x, const at::Tensor& y) {
    auto v = x.narrow(1, 1, 2);
    v.neg_();
    auto t = y * 2;
    t.select(1, 0).copy_(v.select(1, 1));
    x.t().narrow(0, 0, 1).mul_(3);
    return std::make_tuple(at::pow(v.permute({1, 0}), 2.0), t.t(), x.narrow(0, 1, x.size(0) - 1) + 1);
  };
  for (auto backend : {jitc::Backend::kInductor, jitc::Backend::kEager}) {
    jitc::Options options;
    options.backend = backend;
    auto compiled = jitc::compile(fn, options);
    for (int64_t n : {3, 5, 7, 9, 5, 11, 3}) {
      INFO("size " << n << " backend " << jitc::to_string(backend));
      auto make = [n] { return std::make_tuple(seeded({n, 4}, 30 + n).narrow(1, 0, 4), seeded({n, 3}, 40 + n)); };
      auto want_args = make();
      const auto want = as_list(std::apply(fn, want_args));
      auto got_args = make();
      std::vector<at::Tensor> got;
      REQUIRE_NOTHROW(got = as_list(std::apply(compiled, got_args)));
      CHECK(compare_results(got, want) == "");
      CHECK(compare_args(got_args, want_args) == "");
    }
  }
}

TEST_CASE("in-place ops on views of arguments, then other views, in other dtypes", "[inplace]") {
  using T = const at::Tensor&;
  for (auto dtype : {at::kHalf, at::kLong, at::kDouble}) {
    INFO("dtype " << c10::toString(dtype));
    auto make = [dtype] { return std::make_tuple((seeded({3, 4, 5}, 50) * 4).to(dtype)); };
    check_both(
        "narrow mul_ permute",
        [](T x) {
          auto v = x.narrow(1, 1, 2);
          v.mul_(-3);
          return v.permute({2, 0, 1}) + 1;
        },
        make);
    check_both(
        "select add_ transpose unsqueeze",
        [](T x) {
          x.select(2, 1).add_(2);
          return x.transpose(0, 2).unsqueeze(1) * 2;
        },
        make);
    check_both(
        "a written intermediate read through expand",
        [](T x) {
          auto t = x.sum(1, true);
          t.neg_();
          return t.expand({3, 4, 5}) - x;
        },
        make);
  }
}

TEST_CASE("an in-place op whose other input partly overlaps what it writes gives eager's result or error", "[inplace]") {
  // Eager's loop reads elements it has already written (its result depends on its loop order), or
  // raises where ATen can tell (contiguous tensors); compiled code read every input first (fuzzer seed
  // 310980). Such a call runs eagerly.
  using T = const at::Tensor&;
  auto transposed = [] { return std::make_tuple(seeded({5, 6}, 60).t()); };
  auto contiguous = [] { return std::make_tuple(seeded({6, 5}, 61)); };
  auto row_times_row0 = [](T x) {
    x.mul_(x.select(0, 0));
    return x * 2;
  };
  check_both("mul_ by its own row, transposed", row_times_row0, transposed);
  check_both("mul_ by its own row, contiguous (eager raises)", row_times_row0, contiguous);
  check_both(
      "copy_ shifted by one column",
      [](T x) {
        x.slice(1, 1).copy_(x.slice(1, 0, -1));
        return x + 1;
      },
      contiguous);
  // Views of one argument that share no element, or the same elements in the same order, still compile.
  auto disjoint_rows = [](T x) {
    x.select(0, 0).add_(x.select(0, 1));
    return x * 2;
  };
  check_both("add_ of another row, transposed", disjoint_rows, transposed);
  auto compiled = jitc::compile(disjoint_rows);
  for (int call = 0; call < 2; ++call) compiled(std::get<0>(transposed()));
  CHECK(compiled.stats().programs_compiled == 1);
  auto same_view = jitc::compile([](T x) {
    x.mul_(x);
    return x + 1;
  });
  for (int call = 0; call < 2; ++call) same_view(std::get<0>(transposed()));
  CHECK(same_view.stats().programs_compiled == 1);
}

TEST_CASE("a reduction over an empty dim of a value with no elements reads no memory it lacks", "[inplace]") {
  // A load hoisted out of the empty reduction read a buffer of no bytes through a null pointer (SIGSEGV,
  // fuzzer seed 404669): such values get the memory their layout spans, and kernels its address.
  using T = const at::Tensor&;
  auto make = [] { return std::make_tuple(at::zeros({7, 1}, at::kInt).expand({7, 0})); };
  check_both(
      "fill_ then any over the empty dim",
      [](T x) {
        x.fill_(0);
        auto q = at::div(x, x, "floor");
        return std::make_tuple(q.any(1), q.sum(1));
      },
      make);
  auto make_float = [] { return std::make_tuple(at::ones({5, 1}).expand({5, 0}), at::ones({5, 3})); };
  check_both(
      "an empty row broadcast into a sum", [](T x, T y) { return (x * 2).sum(1, true) + y; }, make_float);
}

TEST_CASE("a value read from an argument before the call writes it keeps the old values", "[inplace]") {
  // The kernel computing the softmax ran after the extern copy_ into x, its only reader being a later
  // view (fuzzer seed 563608): it read the new values.
  using T = const at::Tensor&;
  auto make = [] { return std::make_tuple(seeded({7}, 70), seeded({1}, 71)); };
  check_both(
      "softmax, copy_ into its input, a view of the softmax",
      [](T x, T y) {
        auto s = at::softmax(x.exp(), 0);
        x.copy_(y);
        return s.unsqueeze(0).t();
      },
      make);
  auto make2 = [] { return std::make_tuple(seeded({4, 5}, 72), seeded({4, 5}, 73)); };
  check_both(
      "a sum read after the write",
      [](T x, T y) {
        auto t = (x * 3).sum(1);
        x.mul_(y);
        return std::make_tuple(t.unsqueeze(1), x + 1);
      },
      make2);
}

// graph/reinplace.h: an update of part of an argument, written back whole by functionalization, runs in
// place again where nothing reads the argument's old contents afterwards.
TEST_CASE("index_copy_ and scatter_ into an argument run in place and match eager, old contents read or not", "[inplace]") {
  using T = const at::Tensor&;
  auto make = [] { return std::make_tuple(seeded({4, 3, 5}, 4), at::tensor({2}, at::kLong), seeded({4, 1, 5}, 5)); };
  check_both(
      "index_copy_, then a read",
      [](T cache, T pos, T k) {
        cache.index_copy_(1, pos, k);
        return (cache * 2).sum(1);
      },
      make);
  check_both(
      "a value computed before the update, returned after it",
      [](T cache, T pos, T k) {
        auto before = cache * 3;
        cache.index_copy_(1, pos, k);
        return before + cache;
      },
      make);
  check_both(
      "a view taken before the update, read after it",
      [](T cache, T pos, T k) {
        auto row = cache.select(1, 2);
        cache.index_copy_(1, pos, k);
        return row * 1;
      },
      make);
  check_both(
      "scatter_",
      [](T cache, T pos, T k) {
        return cache.scatter_(1, pos.view({1, 1, 1}).expand({4, 1, 5}), k) + 1;
      },
      make);
  auto out_of_range = [] { return std::make_tuple(seeded({4, 3, 5}, 4), at::tensor({3}, at::kLong), seeded({4, 1, 5}, 5)); };
  check_both(
      "an index out of range raises as in eager",
      [](T cache, T pos, T k) {
        cache.index_copy_(1, pos, k);
        return cache * 1;
      },
      out_of_range);

  jitc::testing::LogCapture logs("passes");
  auto compiled = jitc::compile([](T cache, T pos, T k) {
    cache.index_copy_(1, pos, k);
    return cache.sum(1);
  });
  auto [cache, pos, k] = make();
  compiled(cache, pos, k);
  compiled(cache, pos, k);
  const std::string text = logs.text();
  CHECK(text.find("after updates of inputs in place") != std::string::npos);
  CHECK(text.find("aten::index_copy_(") != std::string::npos);
}

TEST_CASE("in-place ops on chunks of a value and on split and unbind views of an argument", "[inplace]") {
  check_both(
      "a GRU-like cell's gates",
      [](const at::Tensor& x, const at::Tensor& h) {
        const at::Tensor gates = at::matmul(x, h.t());
        auto g = gates.unsafe_chunk(3, 1);
        g[0].sigmoid_();
        g[1].sigmoid_();
        g[2].tanh_().mul_(g[0]);
        h.split(2, 0)[1].mul_(g[1].sum());
        h.unbind(1)[0].zero_();
        return std::make_tuple(gates * 1, (h * 2).chunk(2, 1)[1]);
      },
      [] { return std::make_tuple(seeded({4, 6}, 1), seeded({9, 6}, 2)); });
}

TEST_CASE("in-place view ops on an intermediate and on a view of an argument", "[inplace]") {
  check_both(
      "transpose_, unsqueeze_ and squeeze_, then writes through the view",
      [](const at::Tensor& x, const at::Tensor& y) {
        at::Tensor h = at::relu(x);
        h.transpose_(0, 1).unsqueeze_(1);
        h.mul_(2);
        at::Tensor v = y.narrow(1, 1, 3);
        v.t_().squeeze_();
        v.add_(h.sum(0));
        return std::make_tuple(h.squeeze(1) + 1, v * 1);
      },
      [] { return std::make_tuple(seeded({4, 3}, 3), seeded({4, 5}, 4)); });
}

TEST_CASE("a strided view of an intermediate written in place and returned has eager's strides", "[inplace]") {
  check_both(
      "slice(step 2).mul_, returned",
      [](const at::Tensor& x) {
        at::Tensor v = (x * 2).slice(0, 1, 5, 2);
        v.mul_(-1);
        return v;
      },
      [] { return std::make_tuple(seeded({6, 3}, 5)); });
}
