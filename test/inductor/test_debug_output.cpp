// What a user sees of the generated code: JITC_LOGS=output_code and the JITC_DEBUG_DIR dumps (CPU).
#include "support/log_capture.h"
#include "support/parity.h"
#include "support/scoped_env.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}


at::Tensor scaled_sines(const at::Tensor& x) { return x.sin() * 2 + x.cos(); }

}  // namespace

TEST_CASE("JITC_LOGS=output_code prints the kernel IR and the optimized, vectorized LLVM IR", "[inductor][output]") {
  jitc::testing::LogCapture logs("output_code");
  auto f = jitc::compile(scaled_sines);
  const auto x = at::randn({16, 1000});
  f(x);
  CHECK(jitc::testing::difference(f(x), scaled_sines(x), {1e-6, 1e-6}) == "");
  const std::string text = logs.text();
  INFO(text.substr(0, 2000));
  CHECK(text.find("[__output_code] Output code of") != std::string::npos);
  CHECK(text.find("kernel jitc_fused_") != std::string::npos);    // kernel IR
  CHECK(text.find("; LLVM IR after O3") != std::string::npos);
  CHECK(text.find("define void @jitc_fused_") != std::string::npos);
  CHECK(text.find("x float>") != std::string::npos);              // the element loop is vectorized
}

TEST_CASE("JITC_DEBUG_DIR dumps graph text, DOT, kernel IR, LLVM IR and assembly per compiled graph", "[inductor][output]") {
  jitc::testing::TempDir dir;
  jitc::testing::ScopedEnv debug_dir("JITC_DEBUG_DIR", dir.path.c_str());
  auto f = jitc::compile(scaled_sines);
  const auto x = at::randn({16, 1000});
  f(x);
  CHECK(jitc::testing::difference(f(x), scaled_sines(x), {1e-6, 1e-6}) == "");
  std::vector<fs::path> graphs;
  for (const auto& entry : fs::directory_iterator(dir.path)) graphs.push_back(entry.path());
  REQUIRE(graphs.size() == 1);
  const fs::path g = graphs[0];
  CHECK(read(g / "graph.txt").find("aten::sin") != std::string::npos);
  CHECK(read(g / "graph.dot").rfind("digraph", 0) == 0);
  CHECK(read(g / "functional.txt").find("aten::cos") != std::string::npos);
  CHECK(read(g / "kernels.txt").find("kernel jitc_fused_") != std::string::npos);
  CHECK(read(g / "kernels.ll").find("define void @jitc_fused_") != std::string::npos);
  CHECK(read(g / "kernels.opt.ll").find("x float>") != std::string::npos);
  const std::string assembly = read(g / "kernels.s");
  CHECK(assembly.find("jitc_fused_") != std::string::npos);
  CHECK((assembly.find("ymm") != std::string::npos || assembly.find("zmm") != std::string::npos || assembly.find("xmm") != std::string::npos));
}

// Three convolutions, each with a training batch norm of another size: the batch norms' sums over (N, H, W) print as
// one function of their sizes, loops of unknown trip count. LLVM unrolled such loops at run time on hosts whose
// scheduling model asks for it (AMD Zen), at every level of the nest, each with a remainder loop (blocks named
// .prol and .epil): most of the code and of LLVM's time (benchmarks/RESULTS.md, session 39).
TEST_CASE("a CNN's training programs hold no loop unrolled at run time", "[inductor][output]") {
  jitc::testing::TempDir dir;
  jitc::testing::ScopedEnv debug_dir("JITC_DEBUG_DIR", dir.path.c_str());
  std::vector<at::Tensor> weights, scales, shifts;
  for (const auto [in, out] : {std::pair<int64_t, int64_t>{3, 8}, {8, 16}, {16, 32}}) {
    weights.push_back((at::randn({out, in, 3, 3}) * 0.3).requires_grad_());
    scales.push_back(at::ones({out}).requires_grad_());
    shifts.push_back(at::zeros({out}).requires_grad_());
  }
  auto net = [&](const at::Tensor& x) {
    at::Tensor y = x;
    for (size_t i = 0; i < weights.size(); ++i) {
      y = at::conv2d(y, weights[i], {}, /*stride=*/i == 0 ? 1 : 2, /*padding=*/1);
      y = at::relu(at::batch_norm(y, scales[i], shifts[i], {}, {}, /*training=*/true, 0.1, 1e-5, false));
    }
    return y.mean();
  };
  auto f = jitc::compile(net);
  const auto x = at::randn({4, 3, 16, 16});
  for (int step = 0; step < 2; ++step) f(x).backward();
  std::vector<at::Tensor> grads;
  for (const auto& w : weights) grads.push_back(w.grad().clone());
  for (auto& w : weights) w.mutable_grad().zero_();
  for (int step = 0; step < 2; ++step) net(x).backward();
  for (size_t i = 0; i < weights.size(); ++i) CHECK(jitc::testing::difference(grads[i], weights[i].grad(), {1e-4, 1e-5}) == "");
  int programs = 0;
  for (const auto& entry : fs::directory_iterator(dir.path)) {
    const std::string optimized = read(entry.path() / "kernels.opt.ll");
    INFO(entry.path().string());
    CHECK(optimized.find("define void @jitc_fused_") != std::string::npos);
    CHECK(optimized.find(".prol") == std::string::npos);
    CHECK(optimized.find(".epil") == std::string::npos);
    ++programs;
  }
  CHECK(programs == 2);  // the forward and the backward
}

TEST_CASE("JITC_LOGS=schedule prints the plan: kernels, extern calls and releases in order", "[inductor][output]") {
  jitc::testing::LogCapture logs("schedule");
  auto block = [](const at::Tensor& x, const at::Tensor& w) { return at::mm(at::mm(x, w).relu(), w) + 1; };
  auto f = jitc::compile(block);
  const auto x = at::randn({8, 8}), w = at::randn({8, 8});
  f(x, w);
  CHECK(jitc::testing::difference(f(x, w), block(x, w), {1e-5, 1e-5}) == "");
  const std::string text = logs.text();
  INFO(text);
  CHECK(text.find("[__schedule] Schedule of") != std::string::npos);
  CHECK(text.find("2 kernels, 2 extern calls") != std::string::npos);
  const size_t first_mm = text.find("extern aten::mm"), relu = text.find("kernel jitc_fused_relu"), release = text.find("release buf");
  CHECK(first_mm < relu);
  CHECK(relu < release);
  CHECK(release != std::string::npos);
}

TEST_CASE("JITC_LOGS=passes prints the graph after each pipeline stage that changed it", "[inductor][output]") {
  jitc::testing::LogCapture logs("passes");
  const auto w = at::randn({8, 3, 3, 3});
  auto f = jitc::compile([&w](const at::Tensor& x) {
    at::Tensor y = x.clone();
    y.mul_(2);  // functionalized into a mul
    return at::conv2d(y, w).relu();
  });
  const auto x = at::randn({2, 3, 16, 16});
  f(x);
  f(x);
  const std::string text = logs.text();
  INFO(text.substr(0, 3000));
  CHECK(logs.lines_with("[__passes]").size() >= 2);
  CHECK(text.find(" after functionalize:") != std::string::npos);
  CHECK(text.find(" after channels-last convolutions:") != std::string::npos);  // CPU convolutions take channels-last operands
  CHECK(text.find(" after group norm statistics:") == std::string::npos);       // no group_norm: the graph is unchanged
}
