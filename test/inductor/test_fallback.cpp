// When lowering, code generation or LLVM fails, the graph runs through eager replay with one warning that
// names the op: never a crash, never a wrong result. Failures are injected with
// JITC_INJECT_FAILURE_TESTING_ONLY (lib/inductor/injected_failure.h).
#include "support/log_capture.h"
#include "support/parity.h"
#include "support/scoped_env.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

namespace {

// A graph of its own shape, so that no other test's compiled program serves it from the memory cache.
at::Tensor relu_block(const at::Tensor& x) { return (x * 3).relu().sum(-1, true) - x; }

void check_falls_back(const std::string& stage, const std::string& needle) {
  jitc::testing::ScopedEnv inject("JITC_INJECT_FAILURE_TESTING_ONLY", (stage + ":aten::relu").c_str());
  jitc::testing::LogCapture capture;
  auto f = jitc::compile(relu_block);
  const auto x = at::randn({7, 13, 3});
  for (int call = 0; call < 3; ++call) {
    const at::Tensor got = f(x);
    CHECK(jitc::testing::difference(got, relu_block(x), {0, 0}) == "");  // eager replay: bit for bit
  }
  const auto warnings = capture.lines_with("runs through the eager backend");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("aten::relu") != std::string::npos);
  CHECK(warnings[0].find(needle) != std::string::npos);
  CHECK(f.stats().programs_compiled == 0);
  CHECK(f.stats().hits == 2);
}

}  // namespace

TEST_CASE("a failing lowering runs the graph eagerly with one warning naming the op", "[inductor][fallback]") {
  check_falls_back("lowering", "lowering aten::relu");
}

TEST_CASE("a failing kernel code generator runs the graph eagerly with one warning naming the op", "[inductor][fallback]") {
  check_falls_back("codegen", "generating kernel jitc_fused_");
}

TEST_CASE("IR that LLVM rejects runs the graph eagerly with one warning naming the op", "[inductor][fallback]") {
  check_falls_back("compile", "LLVM rejected the IR");
}

TEST_CASE("an injected failure for another op changes nothing", "[inductor][fallback]") {
  jitc::testing::ScopedEnv inject("JITC_INJECT_FAILURE_TESTING_ONLY", "compile:aten::sigmoid");
  jitc::testing::LogCapture capture;
  auto f = jitc::compile(relu_block);
  const auto x = at::randn({7, 13, 3});
  f(x);
  CHECK(jitc::testing::difference(f(x), relu_block(x), {1e-6, 1e-6}) == "");
  CHECK(capture.lines_with("runs through the eager backend").empty());
  CHECK(f.stats().programs_compiled == 1);
}

TEST_CASE("under JITC_STRICT=1 a jitc bug reaches the caller, and without it the graph falls back", "[inductor][fallback]") {
  jitc::testing::ScopedEnv inject("JITC_INJECT_FAILURE_TESTING_ONLY", "bug:aten::relu");
  const auto x = at::randn({7, 13, 3});
  {
    jitc::testing::ScopedEnv strict("JITC_STRICT", "1");
    auto f = jitc::compile(relu_block);
    auto twice = [&] {  // code is generated on the first call or the second, as the engine chooses
      f(x);
      f(x);
    };
    CHECK_THROWS_AS(twice(), jitc::InternalError);
  }
  jitc::testing::ScopedEnv lenient("JITC_STRICT", "0");
  jitc::testing::LogCapture capture;
  auto f = jitc::compile(relu_block);
  for (int call = 0; call < 3; ++call) CHECK(jitc::testing::difference(f(x), relu_block(x), {0, 0}) == "");
  const auto warnings = capture.lines_with("runs through the eager backend");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("jitc internal error at") != std::string::npos);
}
