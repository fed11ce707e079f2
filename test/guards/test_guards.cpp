// Guards, recompiles, recompile limit, dynamic shapes, graph breaks and the logs that explain them,
// tested end to end: make a guard miss happen and check stats().recompile_reasons (Dynamo's texts), the
// JITC_LOGS output captured through a log sink, and that every result equals eager's.
#include <catch2/catch.hpp>

#include "support/scoped_env.h"
#include "runtime/log.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <unistd.h>
#include <vector>

using jitc::testing::ScopedEnv;

namespace {

// Captures every log line (JITC_LOGS artifacts and warnings) for the lifetime of the object.
class LogCapture {
 public:
  explicit LogCapture(const std::string& spec) {
    jitc::runtime::set_log_sink([this](const std::string& text) {
      std::lock_guard<std::mutex> lock(mutex_);
      chunks_.push_back(text);
    });
    jitc::runtime::set_logs(spec);
  }
  ~LogCapture() {
    jitc::runtime::set_log_sink({});
    jitc::runtime::set_logs("");
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string text() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string all;
    for (const auto& c : chunks_) all += c;
    return all;
  }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    const std::string all = text();
    size_t start = 0;
    while (start < all.size()) {
      size_t end = all.find('\n', start);
      if (end == std::string::npos) end = all.size();
      out.push_back(all.substr(start, end - start));
      start = end + 1;
    }
    return out;
  }
  // Lines containing `needle`.
  std::vector<std::string> lines_with(const std::string& needle) const {
    std::vector<std::string> out;
    for (auto& l : lines())
      if (l.find(needle) != std::string::npos) out.push_back(l);
    return out;
  }
  size_t count(const std::string& needle) const {
    const std::string all = text();
    size_t n = 0;
    for (size_t at = all.find(needle); at != std::string::npos; at = all.find(needle, at + 1)) ++n;
    return n;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    chunks_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> chunks_;
};

class ScopedDefaultDtype {
 public:
  explicit ScopedDefaultDtype(caffe2::TypeMeta dtype) : old_(c10::get_default_dtype()) { c10::set_default_dtype(dtype); }
  ~ScopedDefaultDtype() { c10::set_default_dtype(old_); }

 private:
  caffe2::TypeMeta old_;
};

bool any_contains(const std::vector<std::string>& texts, const std::string& needle) {
  return std::any_of(texts.begin(), texts.end(), [&](const std::string& t) { return t.find(needle) != std::string::npos; });
}

bool same(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && at::allclose(a, b);
}

at::Tensor positive(std::vector<int64_t> sizes) { return at::rand(sizes) + 0.5; }

// A reason is "<frame>/<compile>: <text>"; frame ids are global counters.
const char* kReasonPrefix = R"(\d+/\d+: )";

}  // namespace

// ===================================================================================================
// Tensor guards
// ===================================================================================================

TEST_CASE("a dtype change recompiles with Dynamo's dtype mismatch reason", "[guards][recompile]") {
  auto f = jitc::compile([](const at::Tensor& x) { return x * 2 + 1; });
  auto a = at::randn({4});
  auto b = a.to(at::kDouble);
  CHECK(same(f(a), a * 2 + 1));
  auto rb = f(b);
  CHECK(rb.scalar_type() == at::kDouble);
  CHECK(same(rb, b * 2 + 1));
  CHECK(same(f(a), a * 2 + 1));
  CHECK(same(f(b), b * 2 + 1));
  const auto s = f.stats();
  CHECK(s.calls == 4);
  CHECK(s.compiles == 2);
  CHECK(s.recompiles == 1);
  CHECK(s.hits == 2);
  CHECK(s.entries == 2);
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK_THAT(s.recompile_reasons[0],
             Catch::Matches(R"(\d+/0: tensor 'args\[0\]' dtype mismatch\. expected Float, actual Double)"));
}

TEST_CASE("a requires_grad change recompiles with the requires_grad mismatch reason", "[guards][recompile]") {
  at::NoGradGuard no_grad;
  auto f = jitc::compile([](const at::Tensor& x) { return x * 3; });
  auto a = at::randn({5});
  auto b = at::randn({5}).requires_grad_(true);
  CHECK(same(f(a), a * 3));
  CHECK(same(f(b), b * 3));
  const auto s = f.stats();
  CHECK(s.compiles == 2);
  CHECK(s.eager_fallbacks == 0);
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK_THAT(s.recompile_reasons[0],
             Catch::Matches(R"(\d+/0: tensor 'args\[0\]' requires_grad mismatch\. expected requires_grad=0)"));
}

TEST_CASE("a rank change recompiles with the rank mismatch reason", "[guards][recompile]") {
  auto f = jitc::compile([](const at::Tensor& x) { return x - 1; });
  auto a = at::randn({4});
  auto b = at::randn({2, 2});
  CHECK(same(f(a), a - 1));
  CHECK(same(f(b), b - 1));
  const auto s = f.stats();
  CHECK(s.compiles == 2);
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK_THAT(s.recompile_reasons[0], Catch::Matches(R"(\d+/0: tensor 'args\[0\]' rank mismatch\. expected 1, actual 2)"));
}

TEST_CASE("a size change names the index and the expected and actual sizes", "[guards][recompile]") {
  jitc::Options o;
  o.dynamic = false;
  auto f = jitc::compile([](const at::Tensor& x) { return x.relu(); }, o);
  auto a = at::randn({8});
  auto b = at::randn({16});
  CHECK(same(f(a), a.relu()));
  CHECK(same(f(b), b.relu()));
  auto c = at::randn({3, 8});
  auto d = at::randn({3, 16});
  CHECK(same(f(c), c.relu()));
  CHECK(same(f(d), d.relu()));
  const auto s = f.stats();
  CHECK(s.compiles == 4);
  REQUIRE(s.recompile_reasons.size() == 3);
  CHECK_THAT(s.recompile_reasons[0],
             Catch::Matches(R"(\d+/0: tensor 'args\[0\]' size mismatch at index 0\. expected 8, actual 16)"));
  // The third entry (shape [3, 8]) is the most recent one checked first.
  CHECK_THAT(s.recompile_reasons[2],
             Catch::Matches(R"(\d+/2: tensor 'args\[0\]' size mismatch at index 1\. expected 8, actual 16)"));
}

TEST_CASE("a stride change with the same sizes recompiles with the stride mismatch reason", "[guards][recompile]") {
  auto f = jitc::compile([](const at::Tensor& x) { return x * 2; });
  auto a = at::randn({4, 6});       // strides [6, 1]
  auto b = at::randn({6, 4}).t();   // sizes [4, 6], strides [1, 4]
  CHECK(same(f(a), a * 2));
  auto rb = f(b);
  CHECK(same(rb, b * 2));
  CHECK(same(f(a), a * 2));
  CHECK(same(f(b), b * 2));
  const auto s = f.stats();
  CHECK(s.compiles == 2);
  CHECK(s.hits == 2);
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK_THAT(s.recompile_reasons[0],
             Catch::Matches(R"(\d+/0: tensor 'args\[0\]' stride mismatch at index 0\. expected 6, actual 1)"));
}

TEST_CASE("an inference tensor has another dispatch key set and recompiles", "[guards][recompile]") {
  auto f = jitc::compile([](const at::Tensor& x) { return x + 2; });
  at::Tensor inference;
  {
    c10::InferenceMode mode;
    inference = at::randn({4});
  }
  REQUIRE(inference.is_inference());
  auto normal = at::randn({4});
  CHECK(same(f(normal), normal + 2));
  CHECK(same(f(inference), inference + 2));
  const auto s = f.stats();
  CHECK(s.compiles == 2);
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK_THAT(s.recompile_reasons[0],
             Catch::Matches(std::string(kReasonPrefix) + "tensor 'args\\[0\\]' dispatch key set mismatch\\. expected .*, actual .*"));
}

TEST_CASE("Options::arg_names name the arguments in reasons and logs", "[guards][recompile][logging]") {
  LogCapture logs("recompiles");
  jitc::Options o;
  o.dynamic = false;
  o.name = "named_fn";
  o.arg_names = {"x", "w"};
  auto f = jitc::compile([](const at::Tensor& x, const at::Tensor& w) { return x.matmul(w); }, o);
  auto x = at::randn({3, 4});
  auto w = at::randn({4, 5});
  auto w2 = at::randn({4, 7});
  CHECK(same(f(x, w), x.matmul(w)));
  CHECK(same(f(x, w2), x.matmul(w2)));
  const auto s = f.stats();
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK_THAT(s.recompile_reasons[0], Catch::Matches(R"(\d+/0: tensor 'w' size mismatch at index 1\. expected 5, actual 7)"));
  CHECK(logs.count("Recompiling function named_fn in ") == 1);
  CHECK(logs.count("tensor 'w' size mismatch at index 1. expected 5, actual 7") == 1);
}

// ===================================================================================================
// Global state
// ===================================================================================================

TEST_CASE("grad mode is global state: switching it recompiles", "[guards][recompile]") {
  auto f = jitc::compile([](const at::Tensor& x) { return x.sin() * 2; });
  auto x = at::randn({6});
  {
    at::NoGradGuard no_grad;
    CHECK(same(f(x), x.sin() * 2));
  }
  REQUIRE(c10::GradMode::is_enabled());
  CHECK(same(f(x), x.sin() * 2));
  {
    at::NoGradGuard no_grad;
    CHECK(same(f(x), x.sin() * 2));
  }
  CHECK(same(f(x), x.sin() * 2));
  const auto s = f.stats();
  CHECK(s.compiles == 2);
  CHECK(s.hits == 2);
  CHECK(s.eager_fallbacks == 0);
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK_THAT(s.recompile_reasons[0], Catch::Matches(R"(\d+/0: GLOBAL_STATE changed: grad_mode )"));
}

TEST_CASE("the default dtype is global state: changing it recompiles", "[guards][recompile]") {
  auto f = jitc::compile([](const at::Tensor& x) { return x + at::ones({4}); });
  auto x = at::randn({4});
  auto r1 = f(x);
  CHECK(r1.scalar_type() == at::kFloat);
  CHECK(same(r1, x + 1));
  {
    ScopedDefaultDtype dbl(caffe2::TypeMeta::Make<double>());
    auto r2 = f(x);
    CHECK(r2.scalar_type() == at::kDouble);  // float + double tensor promotes
    CHECK(same(r2, x + at::ones({4})));
  }
  CHECK(f(x).scalar_type() == at::kFloat);
  const auto s = f.stats();
  CHECK(s.compiles == 2);
  CHECK(s.hits == 1);
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK_THAT(s.recompile_reasons[0], Catch::Matches(R"(\d+/0: GLOBAL_STATE changed: default_dtype )"));
}

// ===================================================================================================
// Scalars, lists, None
// ===================================================================================================

TEST_CASE("double int and bool arguments are guarded by value", "[guards][recompile]") {
  SECTION("double") {
    auto f = jitc::compile([](const at::Tensor& x, double s) { return x * s; });
    auto x = at::randn({4});
    CHECK(same(f(x, 0.5), x * 0.5));
    CHECK(same(f(x, 1.5), x * 1.5));
    CHECK(same(f(x, 0.5), x * 0.5));
    const auto s = f.stats();
    CHECK(s.compiles == 2);
    CHECK(s.hits == 1);
    REQUIRE(s.recompile_reasons.size() == 1);
    CHECK_THAT(s.recompile_reasons[0], Catch::Matches(R"(\d+/0: args\[1\] == 0\.5)"));
  }
  SECTION("int") {
    auto f = jitc::compile([](const at::Tensor& x, int64_t k) { return x + k; });
    auto x = at::randn({4});
    CHECK(same(f(x, 3), x + 3));
    CHECK(same(f(x, 4), x + 4));
    CHECK(same(f(x, 3), x + 3));
    const auto s = f.stats();
    CHECK(s.compiles == 2);
    REQUIRE(s.recompile_reasons.size() == 1);
    CHECK_THAT(s.recompile_reasons[0], Catch::Matches(R"(\d+/0: args\[1\] == 3)"));
  }
  SECTION("bool picks a branch while tracing; the guard keeps both right") {
    auto f = jitc::compile([](const at::Tensor& x, bool negate) { return negate ? -x : x * 2; });
    auto x = at::randn({4});
    CHECK(same(f(x, true), -x));
    CHECK(same(f(x, false), x * 2));
    CHECK(same(f(x, true), -x));
    CHECK(same(f(x, false), x * 2));
    const auto s = f.stats();
    CHECK(s.compiles == 2);
    CHECK(s.hits == 2);
    REQUIRE(s.recompile_reasons.size() == 1);
    CHECK_THAT(s.recompile_reasons[0], Catch::Matches(R"(\d+/0: args\[1\] == True)"));
  }
}

TEST_CASE("a list length change recompiles with the len() reason", "[guards][recompile]") {
  auto f = jitc::compile([](const std::vector<at::Tensor>& xs) { return at::stack(xs).sum(0); });
  std::vector<at::Tensor> three{at::randn({4}), at::randn({4}), at::randn({4})};
  std::vector<at::Tensor> two{at::randn({4}), at::randn({4})};
  CHECK(same(f(three), at::stack(three).sum(0)));
  CHECK(same(f(two), at::stack(two).sum(0)));
  CHECK(same(f(three), at::stack(three).sum(0)));
  const auto s = f.stats();
  CHECK(s.compiles == 2);
  CHECK(s.hits == 1);
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK_THAT(s.recompile_reasons[0], Catch::Matches(R"(\d+/0: len\(args\[0\]\) == 3)"));
}

TEST_CASE("list elements are named by argument and position in guard failures", "[guards][recompile]") {
  jitc::Options o;
  o.dynamic = false;
  auto f = jitc::compile([](const std::vector<at::Tensor>& xs) { return at::cat(xs); }, o);
  std::vector<at::Tensor> a{at::randn({2}), at::randn({3}), at::randn({4})};
  std::vector<at::Tensor> b{a[0], a[1], at::randn({5})};
  CHECK(same(f(a), at::cat(a)));
  CHECK(same(f(b), at::cat(b)));
  const auto s = f.stats();
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK_THAT(s.recompile_reasons[0],
             Catch::Matches(R"(\d+/0: tensor 'args\[0\]\[2\]' size mismatch at index 0\. expected 4, actual 5)"));
}

TEST_CASE("None versus Tensor in an optional argument recompiles", "[guards][recompile]") {
  auto f = jitc::compile(
      [](const at::Tensor& x, const std::optional<at::Tensor>& b) { return b ? x.matmul(*b) : x * 2; });
  auto x = at::randn({3, 3});
  auto b = at::randn({3, 3});
  SECTION("Tensor first, then None") {
    CHECK(same(f(x, b), x.matmul(b)));
    CHECK(same(f(x, std::nullopt), x * 2));
    CHECK(same(f(x, b), x.matmul(b)));
    const auto s = f.stats();
    CHECK(s.compiles == 2);
    CHECK(s.hits == 1);
    REQUIRE(s.recompile_reasons.size() == 1);
    CHECK_THAT(s.recompile_reasons[0],
               Catch::Matches(R"(\d+/0: argument 'args\[1\]' mismatch\. expected Tensor, actual None)"));
  }
  SECTION("None first, then Tensor") {
    CHECK(same(f(x, std::nullopt), x * 2));
    CHECK(same(f(x, b), x.matmul(b)));
    const auto s = f.stats();
    REQUIRE(s.recompile_reasons.size() == 1);
    CHECK_THAT(s.recompile_reasons[0],
               Catch::Matches(R"(\d+/0: argument 'args\[1\]' mismatch\. expected None, actual Tensor)"));
  }
}

// ===================================================================================================
// Aliasing
// ===================================================================================================

namespace {
at::Tensor add_then_sum(at::Tensor a, at::Tensor b) {
  a.add_(1);
  return a + b;
}
}  // namespace

TEST_CASE("aliasing between arguments is guarded and results stay eager's", "[guards][recompile]") {
  auto f = jitc::compile([](at::Tensor a, at::Tensor b) { return add_then_sum(a, b); });
  auto x = at::randn({4});
  auto y = at::randn({4});
  auto xe = x.clone(), ye = y.clone();
  SECTION("the same tensor twice, then two tensors") {
    CHECK(same(f(x, x), add_then_sum(xe, xe)));
    CHECK(at::equal(x, xe));
    CHECK(same(f(x, y), add_then_sum(xe, ye)));
    CHECK(at::equal(x, xe));
    CHECK(at::equal(y, ye));
    // Both entries are served again.
    CHECK(same(f(x, x), add_then_sum(xe, xe)));
    CHECK(same(f(x, y), add_then_sum(xe, ye)));
    CHECK(at::equal(x, xe));
    const auto s = f.stats();
    CHECK(s.compiles == 2);
    CHECK(s.hits == 2);
    REQUIRE(s.recompile_reasons.size() == 1);
    CHECK_THAT(s.recompile_reasons[0], Catch::Matches(std::string(kReasonPrefix) + ".*args\\[1\\].*alias.*"));
  }
  SECTION("two tensors, then the same tensor twice: Dynamo's duplicate tensor reason") {
    CHECK(same(f(x, y), add_then_sum(xe, ye)));
    CHECK(same(f(x, x), add_then_sum(xe, xe)));
    CHECK(at::equal(x, xe));
    CHECK(at::equal(y, ye));
    const auto s = f.stats();
    CHECK(s.compiles == 2);
    REQUIRE(s.recompile_reasons.size() == 1);
    CHECK_THAT(s.recompile_reasons[0],
               Catch::Matches(R"(\d+/0: Duplicate tensor found where not expected! args\[1\]should not alias to anything, but is aliased)"));
  }
  SECTION("a view of the first argument passed as the second") {
    CHECK(same(f(x, y), add_then_sum(xe, ye)));
    // b shares a's storage: a.add_(1) is visible through b, as in eager.
    CHECK(same(f(x, x.view({4})), add_then_sum(xe, xe.view({4}))));
    CHECK(at::equal(x, xe));
    const auto s = f.stats();
    CHECK(s.compiles == 2);
    REQUIRE(s.recompile_reasons.size() == 1);
    CHECK_THAT(s.recompile_reasons[0], Catch::Contains("Duplicate tensor found where not expected! args[1]"));
  }
}

// ===================================================================================================
// Entries, stats and reset
// ===================================================================================================

TEST_CASE("alternating shapes with dynamic=false: two entries then only hits", "[guards][recompile]") {
  jitc::Options o;
  o.dynamic = false;
  auto f = jitc::compile([](const at::Tensor& x) { return x.exp(); }, o);
  auto a = at::randn({3});
  auto b = at::randn({5});
  for (int i = 0; i < 4; ++i) {
    CHECK(same(f(a), a.exp()));
    CHECK(same(f(b), b.exp()));
  }
  const auto s = f.stats();
  CHECK(s.calls == 8);
  CHECK(s.compiles == 2);
  CHECK(s.recompiles == 1);
  CHECK(s.hits == 6);
  CHECK(s.entries == 2);
  CHECK(s.eager_fallbacks == 0);
  CHECK(s.recompile_reasons.size() == 1);
}

TEST_CASE("jitc::reset drops the entries of every compiled function", "[guards][recompile]") {
  auto f = jitc::compile([](const at::Tensor& x) { return x * 4; });
  auto g = jitc::compile([](const at::Tensor& x) { return x + 4; });
  auto x = at::randn({3});
  f(x);
  f(x);
  g(x);
  REQUIRE(f.stats().entries == 1);
  REQUIRE(g.stats().entries == 1);
  REQUIRE(f.stats().hits == 1);
  jitc::reset();
  CHECK(f.stats().entries == 0);
  CHECK(g.stats().entries == 0);
  CHECK(same(f(x), x * 4));
  CHECK(same(g(x), x + 4));
  const auto s = f.stats();
  CHECK(s.entries == 1);
  CHECK(s.compiles == 1);  // the next call compiles; counters restart
  CHECK(s.recompiles == 0);
  CHECK(s.hits == 0);
  CHECK(same(f(x), x * 4));
  CHECK(f.stats().hits == 1);
}

// ===================================================================================================
// Recompile limit
// ===================================================================================================

TEST_CASE("dynamic=false over ten sizes: eight compiles then eager with one warning", "[recompile][dynamic]") {
  LogCapture logs("");
  jitc::Options o;
  o.dynamic = false;
  o.name = "limited_fn";
  auto f = jitc::compile([](const at::Tensor& x) { return (x * 2).sum(1); }, o);
  for (int64_t b = 2; b <= 11; ++b) {
    auto x = at::randn({b, 4});
    CHECK(same(f(x), (x * 2).sum(1)));
  }
  auto s = f.stats();
  CHECK(s.calls == 10);
  CHECK(s.compiles == 8);
  CHECK(s.recompiles == 7);
  CHECK(s.entries == 8);
  CHECK(s.eager_fallbacks == 2);
  CHECK(s.hits == 0);
  CHECK(s.recompile_reasons.size() == 7);
  CHECK(logs.count("jitc hit recompile_limit (8)") == 1);
  CHECK(logs.count("function: 'limited_fn'") == 1);
  const auto last = logs.lines_with("last reason: ");
  REQUIRE(last.size() == 1);
  CHECK_THAT(last[0], Catch::Contains("tensor 'args[0]' size mismatch at index 0"));
  CHECK_THAT(last[0], Catch::StartsWith("W"));
  // Existing entries are still served; further misses stay eager without another warning.
  auto x2 = at::randn({2, 4});
  CHECK(same(f(x2), (x2 * 2).sum(1)));
  auto x12 = at::randn({12, 4});
  CHECK(same(f(x12), (x12 * 2).sum(1)));
  s = f.stats();
  CHECK(s.hits == 1);
  CHECK(s.eager_fallbacks == 3);
  CHECK(s.compiles == 8);
  CHECK(s.calls == s.hits + s.compiles + s.eager_fallbacks);
  CHECK(logs.count("jitc hit recompile_limit") == 1);
}

TEST_CASE("Options::recompile_limit sets the limit and JITC_RECOMPILE_LIMIT overrides it", "[recompile]") {
  LogCapture logs("");
  jitc::Options o;
  o.dynamic = false;
  SECTION("Options::recompile_limit") {
    o.recompile_limit = 3;
    auto f = jitc::compile([](const at::Tensor& x) { return x.cos(); }, o);
    for (int64_t n = 1; n <= 6; ++n) {
      auto x = at::randn({n});
      CHECK(same(f(x), x.cos()));
    }
    const auto s = f.stats();
    CHECK(s.compiles == 3);
    CHECK(s.entries == 3);
    CHECK(s.eager_fallbacks == 3);
    CHECK(logs.count("jitc hit recompile_limit (3)") == 1);
  }
  SECTION("JITC_RECOMPILE_LIMIT") {
    ScopedEnv env("JITC_RECOMPILE_LIMIT", "2");
    o.recompile_limit = 5;
    auto f = jitc::compile([](const at::Tensor& x) { return x.abs(); }, o);
    for (int64_t n = 1; n <= 5; ++n) {
      auto x = at::randn({n});
      CHECK(same(f(x), x.abs()));
    }
    const auto s = f.stats();
    CHECK(s.compiles == 2);
    CHECK(s.eager_fallbacks == 3);
    CHECK(logs.count("jitc hit recompile_limit (2)") == 1);
  }
}

TEST_CASE("fullgraph=true turns the recompile limit into FullGraphError", "[recompile]") {
  jitc::Options o;
  o.dynamic = false;
  o.fullgraph = true;
  o.recompile_limit = 2;
  auto f = jitc::compile([](const at::Tensor& x) { return x * 5; }, o);
  auto a = at::randn({2}), b = at::randn({3}), c = at::randn({4});
  CHECK(same(f(a), a * 5));
  CHECK(same(f(b), b * 5));
  try {
    f(c);
    FAIL("expected jitc::FullGraphError");
  } catch (const jitc::FullGraphError& e) {
    CHECK_THAT(e.what(), Catch::Contains("recompile_limit (2)"));
    CHECK_THAT(e.what(), Catch::Contains("size mismatch"));
  }
  // The existing entries still serve their shapes.
  CHECK(same(f(a), a * 5));
  CHECK(f.stats().entries == 2);
}

// ===================================================================================================
// Logging
// ===================================================================================================

TEST_CASE("JITC_LOGS=recompiles prints Dynamo's recompile message", "[logging][recompile]") {
  LogCapture logs("recompiles");
  jitc::Options o;
  o.dynamic = false;
  o.name = "logged_fn";
  // clang-format off
  const int line = __LINE__; auto f = jitc::compile([](const at::Tensor& x) { return x + 1; }, o);
  // clang-format on
  auto a = at::randn({8});
  f(a);
  CHECK(logs.text().empty());  // the first compile is no recompile
  f(at::randn({16}));
  const auto lines = logs.lines();
  REQUIRE(lines.size() == 3);
  const std::string prefix =
      R"(V\d{4} \d{2}:\d{2}:\d{2}\.\d{6} (\d+) runtime/compile\.cpp:\d+\] \[(\d+)/1\] \[__recompiles\] )";
  std::smatch m;
  REQUIRE(std::regex_match(lines[0], m, std::regex(prefix + "Recompiling function logged_fn in (.*)")));
  CHECK(m[1].str() == std::to_string(::getpid()));
  const std::string frame = m[2].str();
  const std::string where = m[3].str();
  CHECK_THAT(where, Catch::EndsWith("test_guards.cpp:" + std::to_string(line)));
  CHECK(std::regex_match(lines[1], std::regex(prefix + R"(    triggered by the following guard failure\(s\):)")));
  REQUIRE(std::regex_match(
      lines[2], m, std::regex(prefix + R"(    - (\d+)/0: tensor 'args\[0\]' size mismatch at index 0\. expected 8, actual 16)")));
  CHECK(m[2].str() == frame);  // the failing entry belongs to the same frame
  CHECK(m[3].str() == frame);

  // A third shape: every entry's failure is listed, the most recent first, under compile id [frame/2].
  logs.clear();
  f(at::randn({32}));
  const auto third = logs.lines();
  REQUIRE(third.size() == 4);
  CHECK_THAT(third[0], Catch::Contains("[" + frame + "/2] [__recompiles] Recompiling function logged_fn"));
  CHECK_THAT(third[2], Catch::EndsWith("- " + frame + "/1: tensor 'args[0]' size mismatch at index 0. expected 16, actual 32"));
  CHECK_THAT(third[3], Catch::EndsWith("- " + frame + "/0: tensor 'args[0]' size mismatch at index 0. expected 8, actual 32"));
}

TEST_CASE("without JITC_LOGS a recompile logs nothing", "[logging][recompile]") {
  LogCapture logs("");
  jitc::Options o;
  o.dynamic = false;
  auto f = jitc::compile([](const at::Tensor& x) { return x + 1; }, o);
  f(at::randn({2}));
  f(at::randn({3}));
  CHECK(f.stats().recompiles == 1);
  CHECK(logs.text().empty());
}

TEST_CASE("JITC_LOGS=guards lists TENSOR_MATCH and symbolic guards", "[logging][guards][dynamic]") {
  LogCapture logs("guards");
  auto f = jitc::compile([](const at::Tensor& x) { return (x * 2).sum(1); });
  f(at::randn({2, 4}));
  CHECK(logs.count("[__guards] GUARDS:") == 1);
  CHECK(logs.count("TENSOR_MATCH: check_tensor(args[0]") == 1);
  CHECK(logs.count("size=[2, 4], stride=[4, 1]") == 1);
  CHECK(logs.count("GLOBAL_STATE: grad_mode=") == 1);
  logs.clear();
  f(at::randn({3, 4}));  // automatic dynamic: the new entry is symbolic in dim 0
  CHECK(logs.count("size=[None, 4], stride=[4, 1]") == 1);
  CHECK(logs.count("LAMBDA_GUARD: 2 <= args[0].size()[0]") == 1);
}

TEST_CASE("JITC_LOGS=dynamic reports automatic dynamic and create_symbol", "[logging][dynamic]") {
  LogCapture logs("dynamic");
  auto f = jitc::compile([](const at::Tensor& x) { return (x * 2).sum(1); });
  f(at::randn({2, 4}));
  f(at::randn({3, 4}));
  CHECK(logs.count("[__dynamic] automatic dynamic args[0] size(0) 2 != 3") == 1);
  CHECK(logs.count("[__dynamic] create_symbol s0 = 3 for args[0].size()[0] [2, int_oo]") == 1);
  CHECK(f.stats().entries == 1);
}

TEST_CASE("JITC_LOGS=graph_breaks reports the break and its reason", "[logging][graph_break]") {
  LogCapture logs("graph_breaks");
  jitc::Options o;
  o.name = "breaking_fn";
  auto f = jitc::compile(
      [](const at::Tensor& x) { return x.sum().item<double>() > 0 ? x * 2 : x - 1; }, o);
  auto x = positive({4});
  CHECK(same(f(x), x * 2));
  CHECK(logs.count("[__graph_breaks] Graph break in user code at 'breaking_fn'") == 1);
  CHECK(logs.count("[__graph_breaks] Graph Break Reason: ") == 1);
}

TEST_CASE("JITC_LOGS grammar: invalid names warn once and components turn on groups", "[logging]") {
  jitc::Options o;
  o.dynamic = false;
  SECTION("an invalid name prints one warning; valid names still apply") {
    LogCapture logs("recompiles,not_a_log_name");
    const auto warnings = logs.lines_with("Invalid log settings");
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::StartsWith("W"));
    CHECK_THAT(warnings[0], Catch::Contains("Invalid log settings: not_a_log_name"));
    logs.clear();
    auto f = jitc::compile([](const at::Tensor& x) { return x + 1; }, o);
    f(at::randn({2}));
    f(at::randn({3}));
    CHECK(logs.count("[__recompiles] Recompiling function ") == 1);
    CHECK(logs.count("Invalid log settings") == 0);
  }
  SECTION("'dynamo' turns on recompiles and guards") {
    LogCapture logs("dynamo");
    auto f = jitc::compile([](const at::Tensor& x) { return x + 1; }, o);
    f(at::randn({2}));
    f(at::randn({3}));
    CHECK(logs.count("Invalid log settings") == 0);
    CHECK(logs.count("[__recompiles] Recompiling function ") == 1);
    CHECK(logs.count("[__guards] GUARDS:") == 2);
  }
}

// ===================================================================================================
// Dynamic shapes
// ===================================================================================================

namespace {
void run_batches(const jitc::CompiledFunction<at::Tensor(const at::Tensor&)>& f, int64_t from, int64_t to) {
  for (int64_t b = from; b <= to; ++b) {
    auto x = at::randn({b, 4});
    auto r = f(x);
    CHECK(same(r, (x * 2).sum(1)));
  }
}
}  // namespace

TEST_CASE("dynamic=auto and dynamic=true: the second size makes the dim symbolic and one entry serves all",
          "[dynamic][recompile]") {
  LogCapture logs("");
  jitc::Options o;
  SECTION("auto") {}
  SECTION("true") { o.dynamic = true; }
  auto f = jitc::compile([](const at::Tensor& x) { return (x * 2).sum(1); }, o);
  run_batches(f, 2, 11);
  const auto s = f.stats();
  CHECK(s.calls == 10);
  CHECK(s.compiles == 2);
  CHECK(s.recompiles == 1);
  CHECK(s.entries == 1);
  // Each new size is traced once to confirm the symbolic graph (no new entry, no code generation);
  // after that every size hits.
  CHECK(s.size_checks == 8);
  CHECK(s.hits == 0);
  CHECK(s.eager_fallbacks == 0);
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK_THAT(s.recompile_reasons[0], Catch::Contains("tensor 'args[0]' size mismatch at index 0. expected 2, actual 3"));
  run_batches(f, 2, 11);
  CHECK(f.stats().hits == 10);
  CHECK(f.stats().compiles == 2);
  CHECK(logs.text().empty());  // no limit warning
}

TEST_CASE("sizes 0 and 1 specialize even after the dim became symbolic", "[dynamic][recompile]") {
  auto f = jitc::compile([](const at::Tensor& x) { return (x * 2).sum(1); });
  run_batches(f, 2, 3);
  REQUIRE(f.stats().entries == 1);
  auto one = at::randn({1, 4});
  CHECK(same(f(one), (one * 2).sum(1)));
  auto s = f.stats();
  CHECK(s.compiles == 3);
  CHECK(s.entries == 2);
  REQUIRE(s.recompile_reasons.size() == 2);
  CHECK_THAT(s.recompile_reasons[1], Catch::Matches(R"(\d+/1: 2 <= args\[0\]\.size\(\)\[0\])"));
  auto zero = at::randn({0, 4});
  auto rz = f(zero);
  CHECK(rz.sizes() == at::IntArrayRef{0});
  s = f.stats();
  CHECK(s.compiles == 4);
  CHECK(s.entries == 3);
  // The symbolic entry and the specialized ones are all served afterwards.
  run_batches(f, 7, 7);
  CHECK(same(f(one), (one * 2).sum(1)));
  CHECK(f(zero).sizes() == at::IntArrayRef{0});
  s = f.stats();
  CHECK(s.compiles == 4);
  CHECK(s.size_checks == 1);  // size 7 was confirmed by its own trace
  CHECK(s.hits == 2);
}

TEST_CASE("mark_dynamic with a max: sizes above it get static entries", "[dynamic][recompile]") {
  SECTION("jitc::mark_dynamic on each tensor") {
    auto f = jitc::compile([](const at::Tensor& x) { return (x * 2).sum(1); });
    auto marked = [](int64_t b) {
      auto x = at::randn({b, 4});
      jitc::mark_dynamic(x, 0, 2, 16);
      return x;
    };
    for (int64_t b : {4, 8, 12, 16}) {
      auto x = marked(b);
      CHECK(same(f(x), (x * 2).sum(1)));
    }
    auto s = f.stats();
    CHECK(s.entries == 1);
    CHECK(s.compiles <= 2);
    auto big = marked(32);
    CHECK(same(f(big), (big * 2).sum(1)));
    s = f.stats();
    CHECK(s.entries == 2);
    REQUIRE_FALSE(s.recompile_reasons.empty());
    CHECK_THAT(s.recompile_reasons.back(), Catch::Matches(R"(\d+/\d+: args\[0\]\.size\(\)\[0\] <= 16)"));
    auto bigger = marked(64);
    CHECK(same(f(bigger), (bigger * 2).sum(1)));
    CHECK(f.stats().entries == 3);
    auto again = marked(10);
    CHECK(same(f(again), (again * 2).sum(1)));
    CHECK(f.stats().entries == 3);
  }
  SECTION("Options::mark_dynamic") {
    jitc::Options o;
    o.mark_dynamic(0, 0, 2, 16);
    auto f = jitc::compile([](const at::Tensor& x) { return (x * 2).sum(1); }, o);
    run_batches(f, 4, 12);
    auto s = f.stats();
    CHECK(s.entries == 1);
    CHECK(s.compiles <= 2);
    auto big = at::randn({32, 4});
    CHECK(same(f(big), (big * 2).sum(1)));
    s = f.stats();
    CHECK(s.entries == 2);
    CHECK_THAT(s.recompile_reasons.back(), Catch::Matches(R"(\d+/\d+: args\[0\]\.size\(\)\[0\] <= 16)"));
    auto bigger = at::randn({64, 4});
    CHECK(same(f(bigger), (bigger * 2).sum(1)));
    CHECK(f.stats().entries == 3);
    run_batches(f, 5, 5);
    CHECK(f.stats().entries == 3);
  }
}

TEST_CASE("mark_dynamic makes the dim symbolic from the first compile", "[dynamic][!mayfail]") {
  // torch._dynamo's semantics. jitc departs on purpose (include/jitc/dynamic.h, README): the first entry
  // is static, and b's first call is traced once to confirm the symbolic graph (a size check), because
  // integers the callable computes from sizes in C++ are invisible to the tracer.
  LogCapture logs("guards");
  auto f = jitc::compile([](const at::Tensor& x) { return (x * 2).sum(1); });
  auto a = at::randn({8, 4});
  jitc::mark_dynamic(a, 0);
  CHECK(same(f(a), (a * 2).sum(1)));
  CHECK(logs.count("size=[None, 4]") == 1);
  auto b = at::randn({16, 4});
  jitc::mark_dynamic(b, 0);
  CHECK(same(f(b), (b * 2).sum(1)));
  const auto s = f.stats();
  CHECK(s.compiles == 1);
  CHECK(s.hits == 1);
}

TEST_CASE("mark_static keeps a dim static under dynamic=auto", "[dynamic][recompile]") {
  SECTION("jitc::mark_static on each tensor") {
    auto f = jitc::compile([](const at::Tensor& x) { return (x * 2).sum(1); });
    for (int64_t b = 2; b <= 6; ++b) {
      auto x = at::randn({b, 4});
      jitc::mark_static(x, 0);
      CHECK(same(f(x), (x * 2).sum(1)));
    }
    CHECK(f.stats().compiles == 5);
    CHECK(f.stats().entries == 5);
  }
  SECTION("Options::mark_static") {
    jitc::Options o;
    o.mark_static(0, 0);
    auto f = jitc::compile([](const at::Tensor& x) { return (x * 2).sum(1); }, o);
    run_batches(f, 2, 6);
    CHECK(f.stats().compiles == 5);
    CHECK(f.stats().entries == 5);
  }
}

TEST_CASE("marking a dim dynamic on a tensor that a static entry matches recompiles", "[dynamic][guards][recompile]") {
  auto f = jitc::compile([](const at::Tensor& x) { return (x * 2).sum(1); });
  auto a = at::randn({8, 4});
  CHECK(same(f(a), (a * 2).sum(1)));
  auto b = at::randn({8, 4});
  jitc::mark_dynamic(b, 0);
  CHECK(same(f(b), (b * 2).sum(1)));
  const auto s = f.stats();
  CHECK(s.compiles == 2);
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK_THAT(s.recompile_reasons[0], Catch::Matches(R"(\d+/0: args\[0\]\._dynamo_dynamic_indices\.issubset\(\{\}\))"));
}

TEST_CASE("sizes computed from a symbolic dim are right at new sizes", "[dynamic]") {
  SECTION("view({x.size(0) * 4, -1})") {
    auto fn = [](const at::Tensor& x) { return x.view({x.size(0) * 4, -1}) + 1; };
    auto f = jitc::compile(fn);
    for (int64_t b : {2, 3, 5, 9, 17}) {
      auto x = at::randn({b, 8});
      auto r = f(x);
      CHECK(r.sizes() == at::IntArrayRef{b * 4, 2});
      CHECK(same(r, fn(x)));
    }
    CHECK(f.stats().compiles == 2);
    CHECK(f.stats().entries == 1);
  }
  SECTION("x.size(0) * x.size(1) with both dims the same symbol") {
    auto fn = [](const at::Tensor& x) { return x.reshape({x.size(0) * x.size(1)}) + 1; };
    auto f = jitc::compile(fn);
    for (int64_t b : {2, 3, 5, 7}) {
      auto x = at::randn({b, b});
      CHECK(same(f(x), fn(x)));
    }
    CHECK(f.stats().compiles == 2);
    CHECK(f.stats().entries == 1);
  }
  SECTION("at::arange(x.size(0))") {
    auto fn = [](const at::Tensor& x) { return x + at::arange(x.size(0), x.options()).unsqueeze(1); };
    auto f = jitc::compile(fn);
    for (int64_t b : {2, 3, 6, 10}) {
      auto x = at::randn({b, 3});
      CHECK(same(f(x), fn(x)));
    }
    CHECK(f.stats().compiles == 2);
    CHECK(f.stats().entries == 1);
  }
}

TEST_CASE("two dims that vary together share a symbol and diverging recompiles", "[dynamic][recompile]") {
  auto fn = [](const at::Tensor& x, const at::Tensor& y) { return at::cat({x, y}) * 2; };
  auto f = jitc::compile(fn);
  for (int64_t b : {2, 3, 5}) {
    auto x = at::randn({b, 4}), y = at::randn({b, 4});
    CHECK(same(f(x, y), fn(x, y)));
  }
  auto s = f.stats();
  CHECK(s.compiles == 2);
  CHECK(s.entries == 1);
  auto x = at::randn({5, 4}), y = at::randn({6, 4});
  CHECK(same(f(x, y), fn(x, y)));
  s = f.stats();
  CHECK(s.compiles == 3);
  REQUIRE(s.recompile_reasons.size() == 2);
  CHECK_THAT(s.recompile_reasons[1], Catch::Contains("args[1].size()[0] == args[0].size()[0]"));
}

TEST_CASE("integers computed non-affinely from a symbolic size stay right at new sizes", "[dynamic]") {
  // Calls with sizes 2, 3, 4, ... as in the batch-size tests above; the callable computes an integer
  // from the size in C++ (invisible to the tracer). The symbolic entry must not replay a wrong value.
  SECTION("floor division: x.size(0) / 2 is 1 at both b=2 and b=3") {
    auto fn = [](const at::Tensor& x) { return x.narrow(0, 0, x.size(0) / 2) * 2; };
    auto f = jitc::compile(fn);
    for (int64_t b = 2; b <= 9; ++b) {
      auto x = at::randn({b, 4});
      auto r = f(x);
      auto e = fn(x);
      CHECK(r.sizes() == e.sizes());
      if (r.sizes() == e.sizes()) CHECK(same(r, e));
    }
  }
  SECTION("min: std::min(x.size(0), 3) equals x.size(0) at b=2 and b=3") {
    auto fn = [](const at::Tensor& x) { return x.narrow(0, 0, std::min<int64_t>(x.size(0), 3)) * 2; };
    auto f = jitc::compile(fn);
    for (int64_t b = 2; b <= 6; ++b) {
      auto x = at::randn({b, 4});
      auto r = f(x);
      auto e = fn(x);
      CHECK(r.sizes() == e.sizes());
      if (r.sizes() == e.sizes()) CHECK(same(r, e));
    }
  }
}

TEST_CASE("symbolic strides are guarded: a transposed input of the same sizes recompiles", "[dynamic][guards][recompile]") {
  auto fn = [](const at::Tensor& x) { return x * 3; };
  auto f = jitc::compile(fn);
  for (int64_t b : {2, 3, 5}) {
    auto x = at::randn({4, b});  // strides [b, 1]: stride 0 is symbolic
    CHECK(same(f(x), fn(x)));
  }
  REQUIRE(f.stats().entries == 1);
  auto t = at::randn({6, 4}).t();  // sizes [4, 6], strides [1, 4]
  CHECK(same(f(t), fn(t)));
  const auto s = f.stats();
  CHECK(s.compiles == 3);
  REQUIRE(s.recompile_reasons.size() == 2);
  CHECK_THAT(s.recompile_reasons[1],
             Catch::Matches(R"(\d+/1: tensor 'args\[0\]' stride mismatch at index 1\. expected 1, actual 4)"));
  auto c = at::randn({4, 9});
  CHECK(same(f(c), fn(c)));
  CHECK(f.stats().compiles == 3);
}

// ===================================================================================================
// Graph breaks
// ===================================================================================================

namespace {
at::Tensor branchy(const at::Tensor& x) {
  if (x.sum().item<double>() > 0) return x * 2;
  return x - 1;
}
at::Tensor write_then_branch(at::Tensor x) {
  x.add_(1);
  if (x.sum().item<double>() > 0) return x * 2;
  return x - 1;
}
}  // namespace

TEST_CASE("a data-dependent branch: both branches right and a new value re-traces", "[graph_break][recompile]") {
  auto f = jitc::compile([](const at::Tensor& x) { return branchy(x); });
  auto pos = positive({4});
  auto neg = -positive({4});
  CHECK(same(f(pos), pos * 2));
  auto s = f.stats();
  CHECK(s.compiles == 1);
  CHECK(s.graph_breaks == 1);
  CHECK(same(f(pos), pos * 2));
  CHECK(f.stats().hits == 1);
  CHECK(same(f(neg), neg - 1));
  s = f.stats();
  CHECK(s.compiles == 2);
  CHECK(s.graph_breaks == 2);
  CHECK(same(f(neg), neg - 1));
  s = f.stats();
  CHECK(s.hits == 2);
  CHECK(s.eager_fallbacks == 0);
}

TEST_CASE("alternating branch values are served by their entries", "[graph_break][recompile]") {
  // Each value was traced once; its entry has the same guards as the other one and its break check
  // holds, so alternating calls should hit rather than re-trace every time.
  auto f = jitc::compile([](const at::Tensor& x) { return branchy(x); });
  auto pos = positive({4});
  auto neg = -positive({4});
  for (int i = 0; i < 3; ++i) {
    CHECK(same(f(pos), pos * 2));
    CHECK(same(f(neg), neg - 1));
  }
  const auto s = f.stats();
  CHECK(s.compiles == 2);
  CHECK(s.hits == 4);
  CHECK(s.entries == 2);
}

TEST_CASE("an argument written before a graph break is written once per call", "[graph_break][recompile]") {
  auto f = jitc::compile([](at::Tensor x) { return write_then_branch(x); });
  const auto P = positive({5});
  const auto N = -positive({5}) - 2;
  auto check_call = [&](const at::Tensor& source) {
    auto arg = source.clone();
    auto ref = source.clone();
    auto r = f(arg);
    auto e = write_then_branch(ref);
    CHECK(same(r, e));
    CHECK(at::equal(arg, ref));  // exactly one add_
  };
  check_call(P);  // trace
  check_call(P);  // hit: same break value
  CHECK(f.stats().hits == 1);
  check_call(N);  // replay of P's entry fails at the break: writes undone, re-traced
  CHECK(f.stats().compiles == 2);
  check_call(N);
  check_call(P);  // flips back
  check_call(N);
  const auto s = f.stats();
  CHECK(s.calls == 6);
  CHECK(s.eager_fallbacks == 0);
}

TEST_CASE("a failed break check names the break in the recompile reason", "[graph_break][recompile][logging]") {
  LogCapture logs("recompiles");
  auto f = jitc::compile([](const at::Tensor& x) { return branchy(x); });
  auto pos = positive({4});
  auto neg = -positive({4});
  f(pos);
  f(neg);
  const auto s = f.stats();
  REQUIRE(s.recompile_reasons.size() == 1);
  CHECK_THAT(s.recompile_reasons[0], Catch::Matches(std::string(kReasonPrefix) + "graph break: .*"));
  CHECK(logs.count("Recompiling function ") == 1);
  CHECK(logs.count("graph break: ") == 1);
}

TEST_CASE("jitc::explain reports the graph break", "[graph_break]") {
  auto f = jitc::compile([](const at::Tensor& x) { return branchy(x); });
  auto pos = positive({4});
  const auto out = jitc::explain(f, pos);
  CHECK(out.graph_count == 2);
  CHECK(out.graph_break_count == 1);
  REQUIRE(out.break_reasons.size() == 1);
  CHECK_THAT(out.break_reasons[0].op, Catch::Contains("item") || Catch::Contains("_local_scalar_dense"));
  CHECK(any_contains(out.guards, "TENSOR_MATCH: check_tensor(args[0]"));
  CHECK_THAT(out.to_string(), Catch::Contains("Graph Break Count: 1"));
}

TEST_CASE("fullgraph=true: a graph break throws FullGraphError naming the op", "[graph_break]") {
  jitc::Options o;
  o.fullgraph = true;
  SECTION("the error names the op") {
    auto f = jitc::compile([](const at::Tensor& x) { return branchy(x); }, o);
    auto pos = positive({4});
    try {
      f(pos);
      FAIL("expected jitc::FullGraphError");
    } catch (const jitc::FullGraphError& e) {
      CHECK_THAT(e.what(), Catch::Contains("aten::item") || Catch::Contains("_local_scalar_dense"));
    }
    CHECK(f.stats().entries == 0);
  }
  SECTION("an in-place write before the break is undone") {
    auto f = jitc::compile([](at::Tensor x) { return write_then_branch(x); }, o);
    auto x = positive({4});
    auto before = x.clone();
    CHECK_THROWS_AS(f(x), jitc::FullGraphError);
    CHECK(at::equal(x, before));
  }
}
