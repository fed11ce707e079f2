// The CPU path from hand-built kernel IR: LLVM IR text -> ORC -> native code, checked against eager.
#include "inductor/channels_last.h"
#include "inductor/cpu/codegen.h"
#include "inductor/cpu/schedule.h"
#include "inductor/index_analysis.h"
#include "inductor/kernel_builder.h"
#include "inductor/scheduler.h"
#include "inductor/cpu/jit.h"
#include "support/log_capture.h"
#include "support/parity.h"
#include "support/scoped_env.h"
#include "support/trace_of.h"

#include <jitc/errors.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include <limits>
#include <set>
#include <thread>

using jitc::graph::SymExpr;
using jitc::inductor::Index;
using jitc::inductor::KernelBuilder;
using jitc::inductor::ReduceKind;
using jitc::inductor::ScalarOp;

namespace {

// For ops where eager's float32 kernel is itself inexact by more than the pointwise tolerance (gelu: its
// 1 + erf(x / sqrt 2) cancels for x near -3.5, 1.1e-6 off float64 there): each compiled element must be
// within the tolerance of float64's result, or no farther from it than eager's.
template <class F, class... T>
std::string compiled_vs_float64(F fn, const T&... args) {
  auto compiled = jitc::compile(fn);
  compiled(args...);
  const at::Tensor got = compiled(args...).to(at::kDouble), eager = fn(args...).to(at::kDouble);
  const at::Tensor exact = fn(args.to(at::kDouble)...);
  const auto tol = jitc::testing::tolerance_for(at::kFloat);
  const at::Tensor allowed = at::maximum((eager - exact).abs(), tol.atol + tol.rtol * exact.abs());
  const at::Tensor over = (got - exact).abs() - allowed;
  if (over.max().item<double>() <= 0) return "";
  const int64_t i = over.flatten().argmax().item<int64_t>();
  return "element " + std::to_string(i) + ": compiled " + std::to_string(got.flatten()[i].item<double>()) + ", eager " +
         std::to_string(eager.flatten()[i].item<double>()) + ", float64 " + std::to_string(exact.flatten()[i].item<double>());
}

std::vector<SymExpr> constants(at::IntArrayRef values) {
  std::vector<SymExpr> out;
  for (auto v : values) out.push_back(SymExpr::constant(v));
  return out;
}

// The kernel ABI: fn(buffers, symbols, tile_begin, tile_end) over every tile.
void run(const jitc::inductor::cpu::CpuModule& module, const std::string& name, std::vector<at::Tensor> buffers,
         std::vector<int64_t> symbols = {0}) {
  std::vector<void*> pointers;
  for (auto& t : buffers) pointers.push_back(t.data_ptr());
  auto* tiles = reinterpret_cast<int64_t (*)(const int64_t*)>(module.symbol(name + ".tiles"));
  auto* fn = reinterpret_cast<void (*)(void* const*, const int64_t*, int64_t, int64_t)>(module.symbol(name));
  fn(pointers.data(), symbols.data(), 0, tiles(symbols.data()));
}

// relu(a * b + c) over [rows, cols]: a contiguous, b transposed, c broadcast over rows.
jitc::inductor::Kernel fused_kernel(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, int64_t tile) {
  KernelBuilder kb("fused_mul_add_relu");
  const int i = kb.var(kb.outer_var(SymExpr::constant(out.size(0))));
  const int j = kb.var(kb.inner_var(SymExpr::constant(out.size(1))));
  auto load = [&](const at::Tensor& t, int buffer) {
    const auto e = t.expand(out.sizes());
    return kb.load(buffer, kb.linear({i, j}, constants(e.strides())));
  };
  const int o = kb.buffer("out", at::kFloat, true);
  const int ba = kb.buffer("a", at::kFloat, false), bb = kb.buffer("b", at::kFloat, false), bc = kb.buffer("c", at::kFloat, false);
  const int sum = kb.binary(ScalarOp::kAdd, kb.binary(ScalarOp::kMul, load(a, ba), load(b, bb)), load(c, bc));
  const int relu = kb.where(kb.binary(ScalarOp::kLt, sum, kb.floating(0, at::kFloat)), kb.floating(0, at::kFloat), sum);
  kb.store(o, kb.linear({i, j}, constants(out.strides())), relu);
  kb.set_tile(tile);
  return kb.take();
}

}  // namespace

TEST_CASE("a fused pointwise kernel over strided and broadcast inputs matches eager bit for bit", "[inductor][cpu]") {
  const auto a = at::randn({5, 37});
  const auto b = at::randn({37, 5}).t();  // non-contiguous
  const auto c = at::randn({37});         // broadcast over rows
  c.data_ptr<float>()[3] = NAN;           // relu keeps NaN, as ATen does
  for (int64_t tile : {0, 8}) {           // whole rows, or rows split into tiles of 8
    auto out = at::empty({5, 37});
    const auto kernel = fused_kernel(out, a, b, c, tile);
    auto module = jitc::inductor::cpu::compile_cpu_module(jitc::inductor::emit_llvm_ir(kernel), kernel.name);
    run(*module, kernel.name, {out, a, b, c});
    CHECK(at::equal(out.isnan(), at::relu(a * b + c).isnan()));
    CHECK(at::allclose(out.nan_to_num(), at::relu(a * b + c).nan_to_num(), 0, 0));
  }
}

TEST_CASE("the inner loop of a contiguous kernel is vectorized", "[inductor][cpu]") {
  const auto a = at::randn({64, 256}), b = at::randn({64, 256}), c = at::randn({256});
  auto out = at::empty({64, 256});
  const auto kernel = fused_kernel(out, a, b, c, 4096);
  auto module = jitc::inductor::cpu::compile_cpu_module(jitc::inductor::emit_llvm_ir(kernel), kernel.name);
  INFO(module->optimized_ir());
  CHECK(module->optimized_ir().find(" x float>") != std::string::npos);
}

TEST_CASE("a row reduction kernel with dynamic sizes serves every size", "[inductor][cpu]") {
  // out[i] = sum_j x[i, j] * x[i, j] over x of sizes [s0, s1], contiguous (strides [s1, 1]).
  KernelBuilder kb("row_sum_of_squares");
  const auto s0 = SymExpr::monomial(1, 0), s1 = SymExpr::monomial(1, 1);
  const int i = kb.var(kb.outer_var(s0));
  std::vector<int> vars;
  const int loop = kb.reduction_loop({s1}, &vars);
  const int x = kb.buffer("x", at::kFloat, false), out = kb.buffer("out", at::kFloat, true);
  const int v = kb.load(x, kb.linear({i, kb.var(vars[0])}, {s1, SymExpr::constant(1)}));
  const int total = kb.reduce(ReduceKind::kSum, kb.binary(ScalarOp::kMul, v, v), loop);
  kb.store(out, i, total);
  const auto kernel = kb.take();
  auto module = jitc::inductor::cpu::compile_cpu_module(jitc::inductor::emit_llvm_ir(kernel), kernel.name);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 5}, {7, 129}, {1, 1000}, {4, 0}}) {
    const auto in = at::randn({rows, cols});
    auto result = at::empty({rows});
    run(*module, kernel.name, {in, result}, {rows, cols});
    CHECK(at::allclose(result, (in * in).sum(-1), 1e-5, 1e-5));
  }
}

TEST_CASE("kernel IR text names buffers, loops and expressions", "[inductor][cpu]") {
  const auto a = at::randn({2, 3});
  auto out = at::empty({2, 3});
  const auto text = jitc::inductor::to_text(fused_kernel(out, a, a, a.select(0, 0), 0));
  CHECK(text.find("buffer out Float out") != std::string::npos);
  CHECK(text.find("v0 outer") != std::string::npos);
  CHECK(text.find("store out[") != std::string::npos);
}

TEST_CASE("LLVM rejecting the IR is a CompileError with LLVM's message", "[inductor][cpu]") {
  try {
    jitc::inductor::cpu::compile_cpu_module("define void @broken( {", "broken");
    FAIL("no error");
  } catch (const jitc::CompileError& e) {
    CHECK(std::string(e.what()).find("broken") != std::string::npos);
  }
}

// Values that a row's later loops reuse come from the row cache: rows over several dims (the cache
// position is the linear position in the row), doubles, a value two reductions and the element loop need.
TEST_CASE("row-cached values match eager", "[inductor][cpu]") {
  using jitc::testing::check_parity;
  auto softmax_2d = [](const at::Tensor& x) {
    const auto e = at::exp(x - x.amax({1, 2}, true));
    return e / e.sum({1, 2}, true);
  };
  auto two_reductions = [](const at::Tensor& x) {
    const auto e = at::exp(x - x.amax(-1, true));
    return e / e.sum(-1, true) + (e * e).sum(-1, true) + at::erf(x).sum(-1, true) * at::erf(x);
  };
  for (auto dtype : {at::kFloat, at::kDouble}) {
    const auto x = at::randn({3, 5, 7}, dtype);
    check_parity("softmax over two dims", softmax_2d, x);
    check_parity("exp reused by two reductions and the element loop", two_reductions, x);
    check_parity(
        "log_softmax", [](const at::Tensor& t) { return at::log_softmax(t, -1); }, x);
    check_parity(
        "two sums of exp over two dims",
        [](const at::Tensor& t) {
          const auto e = at::exp(t - t.amax({1, 2}, true));
          return e.sum({1, 2}) * (e * e).sum({1, 2});
        },
        x);
  }
}

// Pointwise kernels whose contiguous dims merge (collapse_inner_dims) and ones whose dims must not.
TEST_CASE("pointwise kernels over merged and unmerged dims match eager", "[inductor][cpu]") {
  using jitc::testing::check_parity;
  const auto x = at::randn({2, 3, 5, 6}), w = at::randn({3}), b = at::randn({3}), m = at::randn({3}), v = at::rand({3}) + 0.5;
  check_parity(
      "batch_norm + relu",
      [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& m, const at::Tensor& v) {
        return at::relu(at::batch_norm(x, w, b, m, v, false, 0.1, 1e-5, true));
      },
      x, w, b, m, v);
  check_parity(
      "broadcast along w", [](const at::Tensor& x, const at::Tensor& y) { return x * y; }, x, at::randn({2, 3, 5, 1}));
  check_parity(
      "a sliced input", [](const at::Tensor& x) { return x.narrow(3, 1, 4).exp(); }, x);
  check_parity(
      "a transposed input", [](const at::Tensor& x, const at::Tensor& y) { return x + y.transpose(2, 3); }, x, at::randn({2, 3, 6, 5}));
  check_parity(
      "channels_last", [](const at::Tensor& x) { return x.relu() + 1; }, x.contiguous(at::MemoryFormat::ChannelsLast));
  // Kernels whose loops follow a channels-last or permuted output (loop_order.cpp).
  const auto cl = x.contiguous(at::MemoryFormat::ChannelsLast);
  check_parity(
      "channels_last batch_norm + relu",
      [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& m, const at::Tensor& v) {
        return at::relu(at::batch_norm(x, w, b, m, v, false, 0.1, 1e-5, true));
      },
      cl, w, b, m, v);
  check_parity(
      "channels_last and contiguous operands", [](const at::Tensor& x, const at::Tensor& y) { return x * y - y; }, cl, x);
  check_parity(
      "contiguous and channels_last operands", [](const at::Tensor& x, const at::Tensor& y) { return x * y - y; }, x, cl);
  check_parity(
      "channels_last with a per-channel bias", [](const at::Tensor& x, const at::Tensor& y) { return (x + y).sigmoid(); }, cl,
      at::randn({1, 3, 1, 1}));
  check_parity(
      "channels_last double", [](const at::Tensor& x) { return x.exp() * 3; }, cl.to(at::kDouble));
  check_parity(
      "channels_last int", [](const at::Tensor& x) { return x * 3 + 1; }, (cl * 10).to(at::kInt));
  check_parity(
      "channels_last with size-1 dims", [](const at::Tensor& x) { return x.abs() + 1; },
      at::randn({1, 4, 1, 7}).contiguous(at::MemoryFormat::ChannelsLast));
  check_parity(
      "a permuted input", [](const at::Tensor& x) { return x.tanh() * 2; }, at::randn({4, 5, 6}).permute({2, 0, 1}));
  check_parity(
      "a permuted input made contiguous", [](const at::Tensor& x) { return x.contiguous() + 1; }, at::randn({4, 5, 6}).permute({1, 2, 0}));
  check_parity(
      "a flipped input", [](const at::Tensor& x) { return x.flip({2}) + 1; }, cl);
  check_parity(
      "an index-dependent value", [](const at::Tensor& x) { return x + at::arange(6, x.options()); }, x);
  check_parity(
      "expanded rows",
      [](const at::Tensor& x, const at::Tensor& y) {
        return x + y.expand({2, 3, 5, 6});
      },
      x, at::randn({1, 3, 5, 6}));
}

// Outputs of 8 MiB and more leave through streaming stores (cpu/codegen_streaming.cpp): rows and tiles
// staged on the stack, 64-byte non-temporal stores where the output row is 64-byte aligned, memcpy where it
// is not (rows of 1001 floats: one row in 16 starts on a line) and for the rest of a row.
TEST_CASE("kernels with large outputs match eager through streaming stores", "[inductor][cpu]") {
  using jitc::testing::compiled_vs_eager;
  const auto x = at::randn({2048, 1024}), b = at::randn({1024}), w = at::randn({1024});
  CHECK(compiled_vs_eager([](const at::Tensor& x) { return at::softmax(x, -1); }, x) == "");
  CHECK(compiled_vs_eager([](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) { return at::layer_norm(x, {1024}, w, b); }, x,
                          w, b) == "");
  CHECK(compiled_vs_float64([](const at::Tensor& x, const at::Tensor& b) { return at::gelu(x + b); }, x, b) == "");
  CHECK(compiled_vs_eager([](const at::Tensor& x) { return (x.sin() + x.cos()).relu(); }, x.reshape({-1})) == "");
  CHECK(compiled_vs_eager([](const at::Tensor& x) { return at::softmax(x * 2, -1); }, at::randn({2100, 1001})) == "");
  CHECK(compiled_vs_eager([](const at::Tensor& x) { return at::softmax(x, -1); }, at::randn({4096, 1024}).to(at::kHalf)) == "");
  CHECK(compiled_vs_eager([](const at::Tensor& x) { return at::softmax(x, -1); }, x.t().contiguous().t()) == "");
  // Two staging kernels in one module (softmax, then the transposed copy): each has its own copy function.
  CHECK(compiled_vs_eager([](const at::Tensor& x) { return at::softmax(x, -1).t().contiguous(); }, x) == "");
}

// Row kernels against eager, pipelined ones (cpu/codegen_pipeline.cpp: layer_norm, var) among those that
// are not (softmax, a max first): many tile ranges (each one's first row from the prologue), a single
// row, rows that do not fill the last chunk, NaN and -inf in some rows (nothing may leak into the next
// row), a row kernel with one loop (RMSNorm), and several dtypes. bfloat16
// only where eager's own kernel rounds once (softmax, log_softmax, layer_norm): jitc computes a bfloat16
// RMSNorm in float32 and rounds once, eager after every op, which differs by a few units in the last place.
TEST_CASE("row kernels match eager whether pipelined or not", "[inductor][cpu]") {
  using jitc::testing::check_parity;
  auto softmax = [](const at::Tensor& x) { return at::softmax(x, -1); };
  auto log_softmax = [](const at::Tensor& x) { return at::log_softmax(x * 0.5, -1); };
  auto layer_norm = [](const at::Tensor& x, const at::Tensor& w) { return at::layer_norm(x, {x.size(-1)}, w, w * 0.5); };
  auto rms_norm = [](const at::Tensor& x, const at::Tensor& w) { return x + w * at::rsqrt((x * x).mean(-1, true) + 1e-6); };
  auto centered_max = [](const at::Tensor& x) { return x - x.amax(-1, true) + x.var(-1, true); };
  auto standardized = [](const at::Tensor& x) { return (x - x.mean(-1, true)) / x.std(-1, true); };
  for (auto dtype : {at::kFloat, at::kDouble, at::kBFloat16})
    for (auto rows : {int64_t{1}, int64_t{3}, int64_t{257}})
      for (auto cols : {int64_t{256}, int64_t{300}, int64_t{1024}}) {
        const std::string shape = std::to_string(rows) + "x" + std::to_string(cols) + " " + c10::toString(dtype);
        at::Tensor x = at::randn({rows, cols}).to(dtype), w = at::randn({cols}).to(dtype);
        if (rows > 2) {
          x[1][7] = std::numeric_limits<double>::quiet_NaN();
          x[2][5] = -std::numeric_limits<double>::infinity();
        }
        check_parity("softmax " + shape, softmax, x);
        check_parity("log_softmax " + shape, log_softmax, x);
        check_parity("layer_norm " + shape, layer_norm, x, w);
        if (dtype == at::kBFloat16) continue;
        check_parity("rms_norm " + shape, rms_norm, x, w);
        check_parity("x - amax + var " + shape, centered_max, x);
        check_parity("(x - mean) / std " + shape, standardized, x);
      }
}

// channels_last.cpp: 2-D convolutions take channels-last operands, through clones that fuse into the
// kernels producing them; the kernels reading their outputs follow that layout (loop_order.cpp).
TEST_CASE("convolutions run on channels-last operands and match eager", "[inductor][cpu]") {
  using jitc::testing::check_parity;
  const auto x = at::randn({2, 8, 10, 10}), w1 = at::randn({8, 8, 3, 3}) * 0.2, w2 = at::randn({8, 8, 3, 3}) * 0.2;
  const auto scale = at::rand({8}) + 0.5, shift = at::randn({8});
  auto block = [scale, shift](const at::Tensor& x, const at::Tensor& w1, const at::Tensor& w2) {
    const auto y = at::relu(at::batch_norm(at::conv2d(x, w1, {}, 1, 1), scale, shift, shift, scale, false, 0.1, 1e-5, true));
    return at::relu(at::batch_norm(at::conv2d(y, w2, {}, 1, 1), scale, shift, shift, scale, false, 0.1, 1e-5, true) + x);
  };
  // Convolutions in another layout sum their 72 products in another order: the tolerance of such sums
  // (at 1e-6 a channels-last block differed by 1.07e-6 in one run under `ctest -j2`).
  jitc::testing::check_parity_reducing("a ResNet basic block", 8 * 9, block, x, w1, w2);
  check_parity(
      "a strided convolution with a bias, then a sum",
      [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
        return (at::conv2d(x, w, b, 2, 1) * 2).sum({2, 3});
      },
      x, w1, shift);
  jitc::testing::check_parity_reducing("a channels-last input", 8 * 9, block, x.contiguous(at::MemoryFormat::ChannelsLast), w1, w2);
  // Left as traced: a convolution returned to the caller, or read by another extern op.
  check_parity(
      "a returned convolution", [](const at::Tensor& x, const at::Tensor& w) { return at::conv2d(x.relu(), w); }, x, w1);
  check_parity(
      "convolutions back to back", [](const at::Tensor& x, const at::Tensor& w) { return at::conv2d(at::conv2d(x, w), w).relu(); }, x, w1);

  // Two blocks: the first block's output is read by the second's convolution and by its residual add.
  auto blocks = [block](const at::Tensor& x, const at::Tensor& w1, const at::Tensor& w2) { return block(block(x, w1, w2), w2, w1); };
  jitc::testing::check_parity_reducing("two ResNet basic blocks", 8 * 9, blocks, x, w1, w2);

  auto traced = jitc::testing::trace_of(blocks, x, w1, w2);
  const auto rewritten = jitc::inductor::convolutions_in_channels_last(traced.graph);
  int clones = 0;
  for (const auto& n : rewritten.nodes) {
    if (n.name() == "aten::clone") ++clones;
    if (n.name() != "aten::conv2d") continue;
    for (jitc::graph::ValueId v : {n.args[0].value, n.outputs[0].values[0]})
      CHECK(rewritten.values[v].meta.strides[1].offset == 1);              // channels-last: C has stride 1
    CHECK(rewritten.values[n.args[1].value].meta.strides[1].offset == 9);  // the weight as it is
  }
  // Only the graph's input is copied; the values between convolutions (the first block's output too,
  // which the residual add reads as well) are computed channels-last; no weight is copied on every call.
  CHECK(clones == 1);
}

// A UNet's encoder level: the batch norm + relu after a convolution is read by a max pool (whose output
// the next convolution reads) and, later, by the decoder's cat. Both follow the convolution's layout: no
// kernel reads or writes across layouts, and the skip connection is computed once, channels-last.
TEST_CASE("kernels between convolutions follow their inputs' channels-last layout", "[inductor][cpu]") {
  auto level = [](const at::Tensor& x, const at::Tensor& w1, const at::Tensor& w2, const at::Tensor& w3) {
    const auto skip = at::relu(at::conv2d(x, w1, {}, 1, 1) * 0.5 + 0.1);
    const auto down = at::relu(at::conv2d(at::max_pool2d(skip, {2, 2}), w2, {}, 1, 1));
    const auto up = at::upsample_nearest2d(down, {32, 32});
    return at::conv2d(at::cat({up, skip}, 1), w3, {}, 1, 1).sum({2, 3});
  };
  const auto x = at::randn({4, 4, 32, 32}), w1 = at::randn({8, 4, 3, 3}) * 0.2, w2 = at::randn({8, 8, 3, 3}) * 0.2;
  const auto w3 = at::randn({4, 16, 3, 3}) * 0.2;
  jitc::testing::check_parity_reducing("a UNet level", 16 * 9 * 1024, level, x, w1, w2, w3);
  const auto traced = jitc::testing::trace_of(level, x, w1, w2, w3);
  const auto rewritten = jitc::inductor::convolutions_in_channels_last(traced.graph);
  int four_d = 0;
  for (const auto& v : rewritten.values) {
    if (v.meta.sizes.size() != 4 || v.meta.sizes[1].offset < 4 || v.producer < 0) continue;
    if (rewritten.nodes[v.producer].name() == "aten::conv2d" && v.meta.sizes[1].offset == 4) continue;  // w3's output, summed
    INFO(rewritten.nodes[v.producer].name() << " " << v.meta.sizes[1].offset << " channels");
    CHECK(v.meta.strides[1].offset == 1);  // every value computed between the convolutions: channels-last
    ++four_d;
  }
  CHECK(four_d >= 6);
}

TEST_CASE("channels-last layout is chosen by cost: not where the weight outweighs the activations", "[inductor][cpu]") {
  // A late layer at batch 1 ([1, 64, 4, 4] through a 64x64x3x3 weight): oneDNN is faster on NCHW there.
  auto late = [](const at::Tensor& x, const at::Tensor& w) { return at::conv2d(x.relu(), w, {}, 1, 1).relu(); };
  const auto x = at::randn({1, 64, 4, 4}), w = at::randn({64, 64, 3, 3}) * 0.05;
  auto traced = jitc::testing::trace_of(late, x, w);
  const auto rewritten = jitc::inductor::convolutions_in_channels_last(traced.graph);
  CHECK(rewritten.nodes.size() == traced.graph.nodes.size());
  // Convolutions in another layout sum their 576 products in another order: the tolerance of such sums.
  jitc::testing::check_parity_reducing("a late layer at batch 1", 64 * 9, late, x, w);
  // At batch 32 and 8x8 maps the activations are 3.6 times the weight: channels-last, the relu before
  // the convolution computed in that layout (no copy).
  const auto batch = at::randn({32, 64, 8, 8});
  const auto relaid = jitc::inductor::convolutions_in_channels_last(jitc::testing::trace_of(late, batch, w).graph);
  CHECK(relaid.nodes.size() == traced.graph.nodes.size());
  for (const auto& n : relaid.nodes)
    if (n.name() == "aten::conv2d") CHECK(relaid.values[n.args[0].value].meta.strides[1].offset == 1);
  jitc::testing::check_parity_reducing("a late layer at batch 32", 64 * 9, late, batch, w);
}

TEST_CASE("one compiled program runs with the thread count of each call", "[inductor][cpu]") {
  // The thread count is read at every launch (runtime::parallel_for), not baked into the kernels.
  auto fn = [](const at::Tensor& x) { return at::softmax(x, -1) + x.sin().sum(0); };
  auto compiled = jitc::compile(fn);
  const auto x = at::randn({512, 96});
  const int before = at::get_num_threads();
  compiled(x);
  for (int threads : {1, 3, 2, 1}) {
    INFO(threads << " threads");
    at::set_num_threads(threads);
    CHECK(jitc::testing::difference(compiled(x), fn(x), {1e-5, 1e-5}) == "");
  }
  at::set_num_threads(before);
  CHECK(compiled.stats().programs_compiled == 1);
  CHECK(compiled.stats().recompiles == 0);
}

namespace {

// The one kernel of fn's graph over x, and fn(x) computed by it when printed as `schedule` says.
template <class F>
jitc::inductor::Kernel only_kernel(F fn, const at::Tensor& x) {
  const auto plan = jitc::inductor::schedule(jitc::testing::trace_of(fn, x).graph, "sched", {});
  REQUIRE(plan.kernels.size() == 1);
  return plan.kernels[0].kernel;
}

at::Tensor run_as_scheduled(const jitc::inductor::Kernel& kernel, const jitc::inductor::llvm_ir::CpuSchedule& schedule,
                            const at::Tensor& x) {
  REQUIRE(kernel.buffers.size() == 2);  // x, then the result
  REQUIRE((!kernel.buffers[0].written && kernel.buffers[1].written));
  auto out = at::empty_like(x);
  auto module = jitc::inductor::cpu::compile_cpu_module(jitc::inductor::emit_llvm_ir(kernel, schedule), kernel.name);
  run(*module, kernel.name, {x, out});
  return out;
}

}  // namespace

// A total of whole-tensor sums (`stack(sums).sum()`, a global gradient norm written by hand): inlined,
// the sums ran one after the other inside the total's loop, one CUDA block for all of them (9.6 ms on
// the H100 for a ResNet-18's gradients). Each large sum is stored by a kernel of its own; the total's
// kernel keeps only its own reduction loop.
TEST_CASE("large reductions inside another reduction's operand get kernels of their own", "[inductor][cpu]") {
  std::vector<at::Tensor> gs;
  for (int i = 0; i < 8; ++i) gs.push_back(i % 2 ? at::randn({64, 100}) : at::randn({3, 50, 50}));
  auto total = [](const std::vector<at::Tensor>& ts) {
    std::vector<at::Tensor> sums;
    for (const auto& t : ts) sums.push_back((t * t).sum());
    return at::stack(sums).sum().sqrt();
  };
  const auto plan = jitc::inductor::schedule(jitc::testing::trace_of(total, gs).graph, "sched", {});
  int totals = 0;
  for (const auto& launch : plan.kernels) {
    const auto& k = launch.kernel;
    bool over_the_sums = false;
    for (int loop = 0; loop < k.num_reduction_loops; ++loop) {
      int64_t elements = 1;
      for (int v : k.loop_vars(loop)) elements *= *jitc::inductor::integer_constant(k, k.vars[v].extent);
      over_the_sums = over_the_sums || elements == 8;
    }
    if (!over_the_sums) continue;
    ++totals;
    CHECK(k.num_reduction_loops == 1);
  }
  CHECK(totals == 1);
  auto compiled = jitc::compile(total);
  compiled(gs);
  CHECK(jitc::testing::difference(compiled(gs), total(gs), {1e-5, 1e-5}) == "");
  // A softmax's statistics loop over its row: still one kernel.
  auto softmax = [](const at::Tensor& x) { return at::softmax(x, -1); };
  const auto softmax_plan = jitc::inductor::schedule(jitc::testing::trace_of(softmax, at::randn({4, 10000})).graph, "sched", {});
  CHECK(softmax_plan.kernels.size() == 1);
}

// Trailing dims of size 1 ([512, 256, 1, 1] weights, pooled [N, C, 1, 1] features) made tiles of one
// element: on the H100, 131072 blocks of 128 threads for a 1x1 convolution's weight update, one element
// each. The nearest dim of another size takes the inner place; contiguous dims then merge as usual.
TEST_CASE("pointwise kernels over shapes ending in size-1 dims tile their other dims", "[inductor][cpu]") {
  using jitc::testing::check_parity;
  auto inner_extent = [](const jitc::inductor::Kernel& k) {
    return *jitc::inductor::integer_constant(k, k.vars[k.inner_vars().at(0)].extent);
  };
  auto update = [](const at::Tensor& t) { return t * 0.9 + 1; };
  CHECK(inner_extent(only_kernel(update, at::randn({512, 256, 1, 1}))) == 512 * 256);
  CHECK(inner_extent(only_kernel(update, at::randn({3, 1, 4, 1}))) == 12);
  CHECK(inner_extent(only_kernel(update, at::randn({1, 1, 1}))) == 1);
  for (const auto& sizes : {std::vector<int64_t>{512, 256, 1, 1}, {3, 1, 4, 1}, {1, 1, 1}, {7, 1}, {2, 3, 1, 5, 1, 1}}) {
    INFO(at::IntArrayRef(sizes));
    const auto x = at::randn(sizes);
    check_parity("update", update, x);
    check_parity(
        "transposed", [](const at::Tensor& t) { return t.transpose(0, -1).exp() + 1; }, x);
    std::vector<int64_t> per_row(sizes.size(), 1);  // [N, 1, 1, 1]: one value per row
    per_row[0] = sizes[0];
    check_parity(
        "broadcast", [](const at::Tensor& t, const at::Tensor& y) { return t * y - y; }, x, at::randn(per_row));
  }
}

// Schedules are data: the scheduling step decides, the printer prints what it is given. Each strategy
// the step chose for a softmax and a layer norm, dropped from the schedule by hand, leaves a kernel
// without it that still computes eager's result.
TEST_CASE("the CPU printer prints each strategy of the schedule it is given and no other", "[inductor][cpu]") {
  using jitc::inductor::llvm_ir::CpuSchedule;
  const auto x = at::randn({64, 1024});
  auto softmax = [](const at::Tensor& t) { return at::softmax(t, -1); };
  auto layer_norm = [](const at::Tensor& t) { return at::layer_norm(t, {t.size(-1)}); };
  const auto tol = jitc::testing::tolerance_for(at::kFloat);
  struct Case {
    const char* strategy;
    bool (*chosen)(const CpuSchedule&);
    void (*drop)(CpuSchedule&);
    const char* printed;  // what the IR holds only with the strategy
  };
  const std::vector<Case> cases = {
      {"row cache", [](const CpuSchedule& s) { return !s.row_cache.empty(); }, [](CpuSchedule& s) { s.row_cache.clear(); }, "%rowcache"},
      {"prefetch", [](const CpuSchedule& s) { return !s.prefetch.empty(); }, [](CpuSchedule& s) { s.prefetch.clear(); }, "@llvm.prefetch"},
      {"pipelined rows", [](const CpuSchedule& s) { return !s.pipelined.empty(); }, [](CpuSchedule& s) { s.pipelined.clear(); }, "%carry"},
      {"streaming stores", [](const CpuSchedule& s) { return !s.staged.empty(); }, [](CpuSchedule& s) { s.staged.clear(); }, ".stream("},
  };
  for (const auto& [name, kernel, eager] :
       {std::tuple{"softmax", only_kernel(softmax, x), softmax(x)}, std::tuple{"layer_norm", only_kernel(layer_norm, x), layer_norm(x)}}) {
    const auto placement = jitc::inductor::place(kernel);
    const CpuSchedule chosen = jitc::inductor::llvm_ir::schedule_cpu_kernel(kernel, placement);
    CHECK(at::allclose(run_as_scheduled(kernel, chosen, x), eager, tol.rtol, tol.atol));
    int dropped = 0;
    for (const Case& c : cases) {
      if (!c.chosen(chosen)) continue;
      INFO(name << " without " << c.strategy);
      ++dropped;
      CpuSchedule without = chosen;
      c.drop(without);
      CHECK(jitc::inductor::emit_llvm_ir(kernel, chosen).find(c.printed) != std::string::npos);
      CHECK(jitc::inductor::emit_llvm_ir(kernel, without).find(c.printed) == std::string::npos);
      CHECK(at::allclose(run_as_scheduled(kernel, without, x), eager, tol.rtol, tol.atol));
    }
    CHECK(dropped >= 2);  // softmax: row cache, prefetch, streaming; layer_norm: pipelined, streaming
  }
}

// A value computed in two loops of a kernel (amax's reduction loop and the element loop comparing with
// the maximum) or in two kernels gets the same bits in each: libm functions are called through one vector
// variant, scalar tails included. With libmvec in the lanes and libm in the tail, rows whose maximum lay in
// the tail found no element equal to it.
TEST_CASE("x == x.amax() finds each row's maximum when x is computed through libm in several loops", "[inductor][cpu]") {
  for (const auto& [dtype, sizes] :
       {std::pair{at::kFloat, std::vector<int64_t>{64, 37}}, std::pair{at::kDouble, std::vector<int64_t>{64, 37}},
        std::pair{at::kFloat, std::vector<int64_t>{4, 20001}}}) {  // rows too long for the row cache
    INFO(c10::toString(dtype) << " " << sizes[1]);
    const auto x = at::randn(sizes, dtype);
    auto fn = [](const at::Tensor& t) {
      const at::Tensor y = (t * 3).tanh() + t.log1p().nan_to_num(0) + (t * 0.5).erf() + (t * 2).sin();
      return (y == y.amax(-1, true)).sum(-1);
    };
    auto compiled = jitc::compile(fn);
    compiled(x);
    const at::Tensor got = compiled(x);
    CHECK(compiled.stats().programs_compiled == 1);
    CHECK(at::equal(got, fn(x)));
    CHECK(at::all(got >= 1).item<bool>());
  }
}

// Float sin and cos take a fast path in element loops (one argument reduction for both) and libm where
// it cannot serve (|x| >= 65536, or outside element loops): each element's bits must depend on its own
// value only, not on the loop computing it or on an out-of-range neighbour in its tile.
TEST_CASE("float sin and cos get the same bits in every loop and next to out-of-range neighbours", "[inductor][cpu]") {
  for (const int64_t columns : {37, 20001}) {
    INFO(columns);
    at::Tensor x = at::randn({16, columns}) * 40;
    x.select(0, 3).fill_(1e6);  // a row whose tiles all redo through libm
    x.index_put_({5, 7}, 3e5);  // one lane out of range in a row of in-range values
    for (auto trig : {+[](const at::Tensor& t) { return t.sin(); }, +[](const at::Tensor& t) { return t.cos(); }}) {
      auto fn = [trig](const at::Tensor& t) {
        const at::Tensor y = trig(t);
        return std::make_tuple((y == y.amax(-1, true)).sum(-1), y);
      };
      auto compiled = jitc::compile(fn);
      compiled(x);
      const auto [found, y] = compiled(x);
      CHECK(at::all(found >= 1).item<bool>());
      at::Tensor in_range = x.clone();
      in_range.index_put_({5, 7}, 0.0);
      at::Tensor y_in_range = std::get<1>(compiled(in_range));
      CHECK(compiled.stats().programs_compiled == 1);
      y_in_range.index_put_({5, 7}, y.index({5, 7}).item());
      CHECK(at::equal(y, y_in_range));
    }
  }
}

// mode=max-autotune's search space on the CPU: the heuristic's schedule first, then variants that each
// decide something else, every one of them computing eager's result.
TEST_CASE("CPU max-autotune candidates: the heuristic's schedule first, then distinct variants, all eager's results", "[inductor][cpu]") {
  using jitc::inductor::llvm_ir::CpuSchedule;
  const auto x = at::randn({64, 1024});
  auto softmax = [](const at::Tensor& t) { return at::softmax(t, -1); };
  auto layer_norm = [](const at::Tensor& t) { return at::layer_norm(t, {t.size(-1)}); };
  const auto tol = jitc::testing::tolerance_for(at::kFloat);
  for (const auto& [name, kernel, eager] :
       {std::tuple{"softmax", only_kernel(softmax, x), softmax(x)}, std::tuple{"layer_norm", only_kernel(layer_norm, x), layer_norm(x)}}) {
    INFO(name);
    const auto placement = jitc::inductor::place(kernel);
    const auto candidates = jitc::inductor::llvm_ir::cpu_schedule_candidates(kernel, placement);
    REQUIRE(candidates.size() >= 3);
    const std::string heuristic = jitc::inductor::llvm_ir::schedule_cpu_kernel(kernel, placement).decisions(kernel).text();
    CHECK(candidates.front().decisions(kernel).text() == heuristic);
    std::set<std::string> distinct;
    for (const CpuSchedule& c : candidates) {
      const std::string decided = c.decisions(kernel).text();
      INFO(decided);
      distinct.insert(decided);
      CHECK(c.fast_sin_cos == candidates.front().fast_sin_cos);  // what changes results stays as decided
      CHECK(c.chunked_sums == candidates.front().chunked_sums);
      CHECK(at::allclose(run_as_scheduled(kernel, c, x), eager, tol.rtol, tol.atol));
    }
    CHECK(distinct.size() == candidates.size());
  }
}

// End to end: each kernel with variants is timed (one AUTOTUNE line naming every candidate and the one
// kept), and the program runs the kept ones: a column sum (blocks of rows side by side in three widths)
// and a softmax.
TEST_CASE("CPU max-autotune times each kernel's candidates and runs the fastest", "[inductor][cpu]") {
  jitc::testing::LogCapture logs("perf_hints");
  auto fn = [](const at::Tensor& x) { return std::make_tuple(x.sum(0), at::softmax(x, -1)); };
  jitc::Options options;
  options.mode = jitc::Mode::kMaxAutotune;
  auto compiled = jitc::compile(fn, options);
  const auto x = at::rand({512, 256});
  for (int call = 0; call < 3; ++call) {
    const auto [sum, softmax] = compiled(x);
    const auto [want_sum, want_softmax] = fn(x);
    CHECK(jitc::testing::difference(sum, want_sum, jitc::testing::reduction_tolerance(at::kFloat, 512)) == "");
    CHECK(jitc::testing::difference(softmax, want_softmax, jitc::testing::tolerance_for(at::kFloat)) == "");
  }
  CHECK(compiled.stats().programs_compiled == 1);
  const auto tuned = logs.lines_with("AUTOTUNE ");
  REQUIRE(tuned.size() == 2);
  const bool widths = std::any_of(tuned.begin(), tuned.end(), [](const std::string& line) {
    return line.find("rows_side_by_side 32") != std::string::npos && line.find("rows_side_by_side 64") != std::string::npos &&
           line.find("rows_side_by_side 128") != std::string::npos;
  });
  CHECK(widths);
  for (const auto& line : tuned) CHECK(line.find("(kept [") != std::string::npos);
}

// A float32 sum adding every value of a long row into a few vector-lane accumulators drifted far from
// float64 (mse_loss over [256, 32000]: relative 1.6e-4, eager's cascade sum 6e-8); summed in chunks it
// stays within a few times eager's distance.
TEST_CASE("float32 sums over millions of elements stay close to float64's", "[inductor][cpu]") {
  at::manual_seed(5);
  auto squares = [](const at::Tensor& x) { return (x * x).sum(); };
  auto mse = [](const at::Tensor& x, const at::Tensor& y) { return at::mse_loss(x, y); };
  auto compiled_squares = jitc::compile(squares);
  auto compiled_mse = jitc::compile(mse);
  for (const auto& sizes : {std::vector<int64_t>{256, 32000}, std::vector<int64_t>{8192000}}) {
    INFO(sizes.size() << " dims");
    const at::Tensor x = at::randn(sizes), y = at::randn(sizes);
    auto relative = [](const at::Tensor& got, const at::Tensor& exact) {
      return std::abs(got.item<double>() - exact.item<double>()) / std::abs(exact.item<double>());
    };
    compiled_squares(x);
    compiled_mse(x, y);
    const at::Tensor x64 = x.to(at::kDouble), y64 = y.to(at::kDouble);
    CHECK(relative(compiled_squares(x), squares(x64)) < 2e-6);
    CHECK(relative(compiled_mse(x, y), mse(x64, y64)) < 2e-6);
  }
  CHECK(compiled_squares.stats().hits == 2);
}

// Kernels whose code is the same but for their names (a network's repeated layers of one shape, here on
// either side of a matmul) are compiled once: the second launches the first's function.
TEST_CASE("kernels whose code is the same but for their names are compiled once", "[inductor][cpu]") {
  const auto w = at::randn({64, 64}) * 0.1;
  auto layer = [](const at::Tensor& x) { return (x * 2).tanh() + 1; };
  auto f = [=](const at::Tensor& x) { return layer(at::mm(layer(x), w)); };
  jitc::testing::LogCapture logs("output_code");
  auto compiled = jitc::compile(f);
  const auto x = at::randn({64, 64});
  compiled(x);
  CHECK(jitc::testing::difference(compiled(x), f(x), {1e-5, 1e-5}) == "");
  CHECK(compiled.stats().kernels_compiled == 2);
  const std::string text = logs.text();
  size_t defined = 0;
  for (size_t at = text.find("define void @jitc_fused_"); at != std::string::npos; at = text.find("define void @jitc_fused_", at + 1))
    ++defined;
  INFO(text.substr(0, 3000));
  CHECK(defined == 1);
}

// A program's kernels compile as several LLVM modules at once, one per thread the host has (at least 4
// kernels each); each module's object is loaded, and every kernel finds its function in its module.
TEST_CASE("a program's kernels compile as modules on several threads at once", "[inductor][cpu]") {
  const auto w = at::randn({32, 32}) * 0.2;
  const std::vector<std::function<at::Tensor(const at::Tensor&)>> layers = {
      [](const at::Tensor& x) { return x.tanh() + 1; },    [](const at::Tensor& x) { return x.sigmoid() * 3; },
      [](const at::Tensor& x) { return x.relu() - 0.5; },  [](const at::Tensor& x) { return (x * 0.5).exp(); },
      [](const at::Tensor& x) { return x.abs().sqrt(); },  [](const at::Tensor& x) { return x.sin() + x.cos(); },
      [](const at::Tensor& x) { return at::gelu(x); },     [](const at::Tensor& x) { return x.softmax(-1); },
      [](const at::Tensor& x) { return at::silu(x) * 2; }, [](const at::Tensor& x) { return x.clamp(-1, 1); }};
  auto f = [&](const at::Tensor& x) {
    at::Tensor y = x;
    for (const auto& layer : layers) y = at::mm(layer(y), w);
    return y;
  };
  jitc::testing::LogCapture logs("output_code");
  auto compiled = jitc::compile(f);
  const auto x = at::randn({32, 32});
  compiled(x);
  CHECK(jitc::testing::difference(compiled(x), f(x), {1e-4, 1e-5}) == "");
  CHECK(compiled.stats().kernels_compiled == static_cast<int64_t>(layers.size()));
  const bool threads = std::thread::hardware_concurrency() >= 2;
  INFO(logs.text().substr(0, 2000));
  CHECK(logs.contains("; part 2 of ") == threads);
}

// Reductions over dim 0 of a network's layers (a batch norm's statistics in channels-last; here var and
// mean over the rows of inputs of three sizes, one with as many rows as columns, whose kernel shares one
// constant between them) print as one function of their sizes: LLVM compiles it once, and each launch
// passes its own sizes. A reduction of its own keeps its constants and unrolled lanes.
namespace {
// The LLVM IR as printed, before LLVM's passes: every kernels.ll that JITC_DEBUG_DIR dumps under `dir`.
std::string printed_llvm_ir(const std::filesystem::path& dir) {
  std::string text;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().filename() != "kernels.ll") continue;
    std::ifstream in(entry.path());
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return text;
}
constexpr const char* kRolledLaneLoop = "!llvm.loop !1000";  // the rolled lane loops' id (codegen_columns.cpp)
}  // namespace

TEST_CASE("column reductions of different sizes compile once as a function of their sizes", "[inductor][cpu]") {
  auto stats = [](const at::Tensor& x) {
    const auto [var, mean] = at::var_mean(x, {0});
    return var * 0.5 + mean;
  };
  auto layers = [&](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
    return std::make_tuple(stats(a), stats(b), stats(c));
  };
  const auto a = at::randn({96, 64}), b = at::randn({40, 256}) + 3, c = at::randn({128, 128}) * 2;
  const jitc::testing::Tolerance tol{1e-5, 1e-5};
  {
    jitc::testing::TempDir dumps;
    jitc::testing::ScopedEnv debug_dir("JITC_DEBUG_DIR", dumps.path.c_str());
    jitc::testing::LogCapture logs("output_code,schedule");
    auto compiled = jitc::compile(layers);
    compiled(a, b, c);
    const auto [ga, gb, gc] = compiled(a, b, c);
    const auto [wa, wb, wc] = layers(a, b, c);
    CHECK(jitc::testing::difference(ga, wa, tol) == "");
    CHECK(jitc::testing::difference(gb, wb, tol) == "");
    CHECK(jitc::testing::difference(gc, wc, tol) == "");
    CHECK(compiled.stats().kernels_compiled == 3);
    INFO(logs.text().substr(0, 4000));
    CHECK(logs.lines_with("size_parameters").size() == 3);
    CHECK(logs.lines_with("define void @jitc_fused_").size() == 1);
    CHECK(printed_llvm_ir(dumps.path).find(kRolledLaneLoop) != std::string::npos);
  }
  jitc::testing::TempDir dumps;
  jitc::testing::ScopedEnv debug_dir("JITC_DEBUG_DIR", dumps.path.c_str());
  jitc::testing::LogCapture lone_logs("output_code,schedule");
  auto lone = jitc::compile(stats);
  lone(a);
  CHECK(jitc::testing::difference(lone(a), stats(a), tol) == "");
  INFO(lone_logs.text().substr(0, 4000));
  CHECK(lone_logs.lines_with("rows_side_by_side").size() == 1);
  CHECK(lone_logs.lines_with("size_parameters").empty());
  const std::string printed = printed_llvm_ir(dumps.path);
  CHECK(printed.find("define void @jitc_fused_") != std::string::npos);
  CHECK(printed.find(kRolledLaneLoop) == std::string::npos);
}

// In a training step's programs (whose compile the first step waits for) a column reduction of its own
// prints as a function of its sizes too: its constant form, with unrolled lanes, is the costlier compile.
TEST_CASE("a lone column reduction of a training program prints as a function of its sizes, with eager's values and gradients",
          "[inductor][cpu][training]") {
  auto stats = [](const at::Tensor& x) {
    const auto [var, mean] = at::var_mean(x, {0});
    return (var * 0.5 + mean).sum();
  };
  const at::Tensor x = at::randn({96, 64}, at::kDouble);
  jitc::testing::LogCapture logs("schedule");
  auto compiled = jitc::compile(stats);
  for (int call = 0; call < 2; ++call) {
    const at::Tensor leaf = x.clone().requires_grad_(true), eager_leaf = x.clone().requires_grad_(true);
    const at::Tensor got = compiled(leaf), want = stats(eager_leaf);
    got.backward();
    want.backward();
    CHECK(at::allclose(got, want, 1e-12, 1e-12));
    CHECK(at::allclose(leaf.grad(), eager_leaf.grad(), 1e-12, 1e-12));
  }
  CHECK(compiled.stats().compiles == 1);
  INFO(logs.text().substr(0, 4000));
  const auto columns = logs.lines_with("rows_side_by_side");
  CHECK(columns.size() >= 1);
  for (const auto& line : columns) CHECK_THAT(line, Catch::Contains("size_parameters"));
}

// With a symbolic row count the kernels read the graph's symbol, then their own parameters.
TEST_CASE("column reductions as functions of their sizes read the graph's symbols too", "[inductor][cpu]") {
  auto layers = [](const at::Tensor& a, const at::Tensor& b) {
    const auto [var_a, mean_a] = at::var_mean(a, {0});
    const auto [var_b, mean_b] = at::var_mean(b, {0});
    return std::make_tuple(var_a + mean_a, var_b + mean_b);
  };
  jitc::testing::LogCapture logs("schedule");
  auto compiled = jitc::compile(layers, jitc::Options().mark_dynamic(0, 0).mark_dynamic(1, 0));
  for (int64_t rows : {96, 40, 96}) {
    INFO(rows << " rows");
    const auto a = at::randn({rows, 64}), b = at::randn({rows, 256}) - 2;
    const auto [ga, gb] = compiled(a, b);
    const auto [wa, wb] = layers(a, b);
    CHECK(jitc::testing::difference(ga, wa, {1e-5, 1e-5}) == "");
    CHECK(jitc::testing::difference(gb, wb, {1e-5, 1e-5}) == "");
  }
  CHECK(compiled.stats().programs_compiled == 1);
  INFO(logs.text().substr(0, 4000));
  CHECK(logs.lines_with("size_parameters").size() == 2);
}

// Row reductions too (a batch norm's statistics in NCHW), here float sums long enough to be added up in
// chunks (the schedule's chunked sums follow the expressions into the parameterized kernel).
TEST_CASE("row sums of different lengths compile once as a function of their sizes", "[inductor][cpu]") {
  auto sums = [](const at::Tensor& a, const at::Tensor& b) { return std::make_tuple(a.sum(-1), b.sum(-1)); };
  const auto a = at::randn({8, 8192}) + 1, b = at::randn({4, 20000}) - 1;
  jitc::testing::LogCapture logs("output_code,schedule");
  auto compiled = jitc::compile(sums);
  compiled(a, b);
  const auto [ga, gb] = compiled(a, b);
  const auto [wa, wb] = sums(a, b);
  CHECK(jitc::testing::difference(ga, wa, {1e-4, 1e-5}) == "");
  CHECK(jitc::testing::difference(gb, wb, {1e-4, 1e-5}) == "");
  INFO(logs.text().substr(0, 4000));
  CHECK(logs.lines_with("chunked_sums 1, size_parameters").size() == 2);
  CHECK(logs.lines_with("define void @jitc_fused_").size() == 1);
}

// The same reduction over the layers of a network, at three sizes (one with as many rows as columns),
// for each kind of reduction the CPU prints rows side by side or as rows: sums and means in every float
// dtype, var with a correction, max with NaN, argmax, prod of integers, logsumexp, softmax over dim 0
// (an element loop after the reductions). Each layer's result against eager's; the layers print as one
// function of their sizes where their IR is alike.
TEST_CASE("reductions printed as functions of their sizes match eager layer by layer", "[inductor][cpu]") {
  using Fn = std::function<at::Tensor(const at::Tensor&)>;
  const std::vector<std::pair<std::string, Fn>> reductions = {
      {"sum(0)", [](const at::Tensor& x) { return x.sum(0); }},
      {"mean(-1) * 3", [](const at::Tensor& x) { return x.mean(-1) * 3; }},
      {"var(0, correction 0)", [](const at::Tensor& x) { return at::var(x, {0}, 0, false); }},
      {"std(-1)", [](const at::Tensor& x) { return x.std(-1); }},
      {"amax(0)", [](const at::Tensor& x) { return x.amax(0); }},
      {"argmax(0)", [](const at::Tensor& x) { return x.argmax(0); }},
      {"logsumexp(0)", [](const at::Tensor& x) { return x.logsumexp(0); }},
      {"softmax(0)", [](const at::Tensor& x) { return x.softmax(0); }},
      {"prod(0) of integers", [](const at::Tensor& x) { return (x.sign().to(at::kLong) + 2).prod(0); }},
  };
  const std::vector<std::vector<int64_t>> sizes = {{48, 64}, {96, 96}, {20, 256}};
  for (const auto dtype : {at::kFloat, at::kDouble, at::kBFloat16}) {
    for (const auto& [name, reduce] : reductions) {
      INFO(name << " in " << dtype);
      std::vector<at::Tensor> layers;
      for (const auto& s : sizes) layers.push_back(at::randn(s).to(dtype));
      layers[1].index_put_({3, 5}, std::numeric_limits<double>::quiet_NaN());
      auto three = [reduce](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
        return std::make_tuple(reduce(a), reduce(b), reduce(c));
      };
      auto compiled = jitc::compile(three);
      compiled(layers[0], layers[1], layers[2]);
      const auto got = compiled(layers[0], layers[1], layers[2]);
      const auto want = three(layers[0], layers[1], layers[2]);
      CHECK(compiled.stats().programs_compiled == 1);
      const std::vector<std::pair<at::Tensor, at::Tensor>> pairs = {
          {std::get<0>(got), std::get<0>(want)}, {std::get<1>(got), std::get<1>(want)}, {std::get<2>(got), std::get<2>(want)}};
      for (size_t layer = 0; layer < pairs.size(); ++layer) {
        INFO("layer " << layer);
        const auto& [g, w] = pairs[layer];
        const int64_t reduced = std::max(sizes[layer][0], sizes[layer][1]);
        CHECK(jitc::testing::difference(g, w, jitc::testing::reduction_tolerance(w.scalar_type(), reduced)) == "");
      }
    }
  }
}

// A batch norm's normalization in channels-last at three resolutions of one width, and a parameter
// update over tensors of three sizes: the layers' pointwise kernels print as one function of their sizes
// each. The channels-last kernels keep their inner loop (the channels) in constants; the updates, one
// flat loop each, pass their lengths.
TEST_CASE("pointwise kernels of different sizes compile once as functions of their sizes", "[inductor][cpu]") {
  const auto scale = at::rand({1, 24, 1, 1}) + 0.5, shift = at::randn({1, 24, 1, 1});
  auto normalize = [=](const at::Tensor& x) { return (x * scale + shift).clamp(0, 6); };
  auto layers = [&](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
    return std::make_tuple(normalize(a), normalize(b), normalize(c));
  };
  auto channels_last = [](at::IntArrayRef sizes) { return at::randn(sizes).contiguous(at::MemoryFormat::ChannelsLast); };
  const auto a = channels_last({2, 24, 8, 8}), b = channels_last({2, 24, 16, 12}), c = channels_last({2, 24, 5, 7});
  jitc::testing::LogCapture logs("output_code,schedule");
  auto compiled = jitc::compile(layers);
  compiled(a, b, c);
  const auto [ga, gb, gc] = compiled(a, b, c);
  const auto [wa, wb, wc] = layers(a, b, c);
  for (const auto& [g, w] : {std::pair{ga, wa}, std::pair{gb, wb}, std::pair{gc, wc}}) {
    CHECK(jitc::testing::difference(g, w, {1e-6, 1e-6}) == "");
    CHECK(g.strides() == w.strides());
  }
  CHECK(compiled.stats().kernels_compiled == 3);
  INFO(logs.text().substr(0, 4000));
  CHECK(logs.lines_with("size_parameters").size() == 3);
  CHECK(logs.lines_with("define void @jitc_fused_").size() == 1);

  // Updates of two flat parameters and two convolution weights: one function for each kind of shape.
  auto update = [](const at::Tensor& p, const at::Tensor& g) { return p - g * 0.01; };
  auto updates = [&](const std::vector<at::Tensor>& p, const std::vector<at::Tensor>& g) {
    std::vector<at::Tensor> out;
    for (size_t i = 0; i < p.size(); ++i) out.push_back(update(p[i], g[i]));
    return out;
  };
  std::vector<at::Tensor> p, g;
  for (const auto& sizes : std::vector<std::vector<int64_t>>{{96}, {4000}, {32, 3, 3, 3}, {16, 8, 3, 3}}) {
    p.push_back(at::randn(sizes));
    g.push_back(at::randn(sizes));
  }
  jitc::testing::LogCapture update_logs("output_code,schedule");
  auto compiled_updates = jitc::compile(updates);
  compiled_updates(p, g);
  const auto got = compiled_updates(p, g);
  for (size_t i = 0; i < p.size(); ++i) CHECK(jitc::testing::difference(got[i], update(p[i], g[i]), {1e-6, 1e-6}) == "");
  INFO(update_logs.text().substr(0, 4000));
  CHECK(update_logs.lines_with("size_parameters").size() == 4);
  CHECK(update_logs.lines_with("define void @jitc_fused_").size() == 2);
}

// A contiguous matrix plus the transpose of another, for two sizes with the same rows and different
// columns: as functions of their sizes they would print alike but for the stride of their inner loop's
// loads, which stays a constant (a load at a run-time stride does not vectorize as interleaved groups):
// two functions.
TEST_CASE("pointwise kernels keep the strides of their inner loop as constants", "[inductor][cpu]") {
  auto transposes = [](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, const at::Tensor& d) {
    return std::make_tuple(c + a.t() * 2, d + b.t() * 2);
  };
  const auto a = at::randn({40, 64}), b = at::randn({40, 96}), c = at::randn({64, 40}), d = at::randn({96, 40});
  jitc::testing::LogCapture logs("output_code,schedule");
  auto compiled = jitc::compile(transposes);
  compiled(a, b, c, d);
  const auto [ga, gb] = compiled(a, b, c, d);
  const auto [wa, wb] = transposes(a, b, c, d);
  CHECK(jitc::testing::difference(ga, wa, {1e-6, 1e-6}) == "");
  CHECK(jitc::testing::difference(gb, wb, {1e-6, 1e-6}) == "");
  INFO(logs.text().substr(0, 4000));
  CHECK(logs.lines_with("define void @jitc_fused_").size() == 2);
}

// The same pointwise op over the layers of a network at three sizes (contiguous, channels-last, and views
// whose inner loop reads at a stride), for what a pointwise kernel's indices and values hold: broadcasts,
// transposed and stepped reads, a cat's boundaries, integer division and remainder, masks, clamps, in
// every float dtype. Each layer's result against eager's.
TEST_CASE("pointwise kernels printed as functions of their sizes match eager layer by layer", "[inductor][cpu]") {
  using Fn = std::function<at::Tensor(const at::Tensor&)>;
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"x * 3 + per-channel bias",
       [](const at::Tensor& x) {
         return x * 3 + at::arange(x.size(1), x.options()).view({1, -1, 1, 1});
       }},
      {"clamp(-0.5, 0.5) * 2", [](const at::Tensor& x) { return x.clamp(-0.5, 0.5) * 2; }},
      {"transpose(1, 3) + 1", [](const at::Tensor& x) { return x.transpose(1, 3) + 1; }},
      {"every other column, exp", [](const at::Tensor& x) { return x.slice(3, 0, c10::nullopt, 2).exp(); }},
      {"cat with itself halved",
       [](const at::Tensor& x) {
         return at::cat({x, x * 0.5}, 1);
       }},
      {"integer floor_divide and remainder",
       [](const at::Tensor& x) {
         const auto i = (x * 10).to(at::kLong);
         return at::floor_divide(i, 3) * 7 + at::remainder(i, 5);
       }},
      {"where(x > 0.25, x, -x) of a channel shuffle",
       [](const at::Tensor& x) {
         const auto s = x.view({x.size(0), 2, x.size(1) / 2, x.size(2), x.size(3)}).transpose(1, 2).reshape(x.sizes());
         return at::where(s > 0.25, s, -s);
       }},
  };
  const std::vector<std::vector<int64_t>> sizes = {{2, 8, 6, 10}, {1, 8, 12, 4}, {3, 8, 5, 5}};
  for (const auto dtype : {at::kFloat, at::kDouble, at::kBFloat16}) {
    for (const auto layout : {at::MemoryFormat::Contiguous, at::MemoryFormat::ChannelsLast}) {
      for (const auto& [name, op] : ops) {
        INFO(name << " in " << dtype << ", " << layout);
        std::vector<at::Tensor> layers;
        for (const auto& s : sizes) layers.push_back(at::randn(s).to(dtype).contiguous(layout));
        auto three = [op](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) { return std::make_tuple(op(a), op(b), op(c)); };
        auto compiled = jitc::compile(three);
        compiled(layers[0], layers[1], layers[2]);
        const auto got = compiled(layers[0], layers[1], layers[2]);
        const auto want = three(layers[0], layers[1], layers[2]);
        CHECK(compiled.stats().programs_compiled == 1);
        CHECK(compiled.stats().eager_fallbacks == 0);
        const jitc::testing::Tolerance tol =
            dtype == at::kBFloat16 ? jitc::testing::Tolerance{1e-2, 1e-2} : jitc::testing::Tolerance{1e-6, 1e-6};
        CHECK(jitc::testing::difference(std::get<0>(got), std::get<0>(want), tol) == "");
        CHECK(jitc::testing::difference(std::get<1>(got), std::get<1>(want), tol) == "");
        CHECK(jitc::testing::difference(std::get<2>(got), std::get<2>(want), tol) == "");
      }
    }
  }
}

// A column reduction over several loop variables (a batch norm's statistics in channels-last, over N, H
// and W) keeps its lane loops rolled, also in a kernel of its own: unrolled, LLVM's unroller copies them
// into every nest. A reduction over one variable keeps them unrolled (above: the lone var_mean).
TEST_CASE("column reductions over several loop variables keep their lane loops rolled", "[inductor][cpu]") {
  auto statistics = [](const at::Tensor& x) {
    const auto [var, mean] = at::var_mean(x, {0, 2, 3}, 0, false);
    return var + mean;
  };
  const auto x = at::randn({4, 64, 6, 6}).slice(3, 0, 5).contiguous(at::MemoryFormat::ChannelsLast);
  jitc::testing::LogCapture logs("output_code,schedule");
  auto compiled = jitc::compile(statistics);
  compiled(x);
  CHECK(jitc::testing::difference(compiled(x), statistics(x), {1e-5, 1e-5}) == "");
  INFO(logs.text().substr(0, 6000));
  CHECK(logs.lines_with("rows_side_by_side").size() == 1);
  CHECK(logs.lines_with("size_parameters").empty());
  CHECK(logs.contains("llvm.loop.unroll.disable"));
}

// A batch norm in channels-last computes its per-channel scale and shift once per call into arrays the
// element loop reads (the inner loop runs over the channels; in NCHW it runs over a row, and LLVM hoists
// them). In a cat of an upsampled batch norm with a skip connection (a UNet's decoder) the arrays are read
// at the element's channel, where the computed values were read at a clamped one. Float, double and
// bfloat16, against eager.
TEST_CASE("values of the inner position are computed once per call and match eager", "[inductor][cpu]") {
  const int64_t channels = 24;
  const auto weight = at::rand({channels}) + 0.5, bias = at::randn({channels}), mean = at::randn({channels}),
             var = at::rand({channels}) + 0.5;
  for (const auto dtype : {at::kFloat, at::kDouble, at::kBFloat16}) {
    INFO(dtype);
    auto params = [&](const at::Tensor& p) { return p.to(dtype); };
    auto normalize = [&](const at::Tensor& x) {
      return at::relu(at::batch_norm(x, params(weight), params(bias), params(mean), params(var), false, 0.1, 1e-5, false));
    };
    auto decoder = [&](const at::Tensor& x, const at::Tensor& skip) {
      return std::make_tuple(normalize(skip), at::cat({at::upsample_nearest2d(normalize(x), {2 * x.size(2), 2 * x.size(3)}), skip}, 1));
    };
    const jitc::testing::Tolerance tol =
        dtype == at::kBFloat16 ? jitc::testing::Tolerance{2e-2, 2e-2} : jitc::testing::Tolerance{1e-5, 1e-6};
    for (const auto layout : {at::MemoryFormat::ChannelsLast, at::MemoryFormat::Contiguous}) {
      INFO(layout);
      const auto x = at::randn({2, channels, 6, 5}).to(dtype).contiguous(layout);
      const auto skip = at::randn({2, channels, 12, 10}).to(dtype).contiguous(layout);
      jitc::testing::LogCapture logs("schedule");
      auto compiled = jitc::compile(decoder);
      compiled(x, skip);
      const auto [normalized, joined] = compiled(x, skip);
      const auto [want_normalized, want_joined] = decoder(x, skip);
      CHECK(jitc::testing::difference(normalized, want_normalized, tol) == "");
      CHECK(jitc::testing::difference(joined, want_joined, tol) == "");
      CHECK(joined.strides() == want_joined.strides());
      INFO(logs.text().substr(0, 4000));
      CHECK(logs.lines_with("position_values 2").size() == (layout == at::MemoryFormat::ChannelsLast ? 2u : 0u));
    }
  }
}

// A batch norm over [N, C] features with a dynamic batch: the rows are a symbol, the channels (the inner
// loop) a constant, and the arrays serve every batch.
TEST_CASE("values of the inner position serve a dynamic batch", "[inductor][cpu]") {
  const int64_t channels = 40;
  const auto weight = at::rand({channels}) + 0.5, bias = at::randn({channels}), mean = at::randn({channels}),
             var = at::rand({channels}) + 0.5;
  auto normalize = [&](const at::Tensor& x) { return at::relu(at::batch_norm(x, weight, bias, mean, var, false, 0.1, 1e-5, false)); };
  jitc::testing::LogCapture logs("schedule");
  auto compiled = jitc::compile(normalize, jitc::Options().mark_dynamic(0, 0));
  for (int64_t batch : {3, 5, 4, 6, 2, 4}) {  // an entry generates code at its second call
    INFO(batch * 3 << " rows");
    const auto x = at::randn({batch * 3, channels});
    const auto got = compiled(x);
    CHECK(jitc::testing::difference(got, normalize(x), {1e-5, 1e-6}) == "");
    CHECK(got.strides() == normalize(x).strides());
  }
  CHECK(compiled.stats().programs_compiled == 1);
  INFO(logs.text().substr(0, 4000));
  CHECK(logs.contains("position_values 2"));
}
