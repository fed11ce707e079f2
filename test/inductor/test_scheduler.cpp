// The scheduler's decisions, read from its log and its plan on meta tensors (the null backend: CUDA's
// capabilities, no hardware): a value that must be stored first, a value that no kernel can compute, the
// results of one node placed in the order they read each other. Each decision is made once; the log of
// the attempt that succeeds follows the decisions that caused new attempts.
#include "graph/passes.h"
#include "inductor/scheduler.h"
#include "support/trace_of.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace {

struct Scheduled {
  jitc::inductor::Plan plan;
  std::vector<std::string> log;
  size_t lines_with(const std::string& text) const {
    return static_cast<size_t>(
        std::count_if(log.begin(), log.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; }));
  }
};

template <class F, class... Args>
Scheduled schedule_of(F fn, const Args&... args) {
  auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(jitc::testing::trace_of(fn, args...).graph));
  Scheduled s;
  const std::function<void(const std::string&)> log = [&s](const std::string& line) { s.log.push_back(line); };
  s.plan = jitc::inductor::schedule(g, "k", log);
  return s;
}

at::Tensor meta(at::IntArrayRef sizes) { return at::empty(sizes, at::device(at::kMeta)); }

}  // namespace

TEST_CASE("scheduler: a reduction read at every element is stored by a kernel of its own, decided once", "[scheduler]") {
  // x.sum(0) is one value per column, read by every row of x - sum: it cannot be computed per row.
  const auto s = schedule_of([](const at::Tensor& x) { return x - x.sum(0, true); }, meta({64, 32}));
  CHECK(s.plan.kernels.size() == 2);
  CHECK(s.lines_with("is stored to a buffer: a reduction is read where the kernel's rows are not its output elements") == 1);
  CHECK(s.plan.extern_reasons.empty());

  // Four layers alike: the decision holds for every layer's sum (one attempt, not one per layer).
  const auto layers = schedule_of(
      [](const at::Tensor& x) {
        at::Tensor h = x;
        for (int layer = 0; layer < 4; ++layer) h = (h - h.sum(0, true)) * 0.5;
        return h;
      },
      meta({64, 32}));
  CHECK(layers.lines_with("is stored to a buffer: a reduction is read where the kernel's rows are not its output elements") == 1);
  CHECK(layers.plan.kernels.size() == 2);  // every column sum in one kernel over the columns, then the rows
  CHECK(layers.plan.extern_reasons.empty());
}

TEST_CASE("scheduler: a mean and two variances of one input sum its rows once and the squares once", "[scheduler]") {
  // A training batch norm's statistics: the mean and biased variance for its output, the unbiased variance
  // for its running variance. Each used to sum the rows again (five passes over x where two serve). On
  // the CPU (var has no meta kernel) in double: a float variance accumulates in double, its mean in float.
  const auto s = schedule_of(
      [](const at::Tensor& x) {
        const std::vector<int64_t> dims{0, 2, 3};
        return std::make_tuple(x.mean(dims), at::var(x, dims, /*correction=*/0, false), at::var(x, dims, /*correction=*/1, false));
      },
      at::randn({8, 16, 5, 5}, at::kDouble));
  REQUIRE(s.plan.kernels.size() == 1);
  const auto& body = s.plan.kernels[0].kernel.body;
  CHECK(std::count_if(body.begin(), body.end(), [](const jitc::inductor::Expr& e) { return e.op == jitc::inductor::ScalarOp::kReduce; }) ==
        2);
  CHECK(s.plan.extern_reasons.empty());
}

TEST_CASE("scheduler: values of a kernel's space computed from its results join it (a batch norm's weight gradient)", "[scheduler]") {
  // A batch norm's backward: the sums over (N, H, W) per channel, the input gradient reading them per
  // element (a kernel over the elements), then the weight and bias gradients of the sums, which the
  // sums' kernel computes as its epilogue instead of a kernel of their own after the elements'.
  const auto s = schedule_of(
      [](const at::Tensor& x, const at::Tensor& dy, const at::Tensor& mean, const at::Tensor& invstd) {
        const std::vector<int64_t> dims{0, 2, 3};
        const at::Tensor centred = x - mean.view({1, -1, 1, 1});
        const at::Tensor sum_dy = dy.sum(dims), dot = (centred * dy).sum(dims);
        const at::Tensor dx = (dy - sum_dy.view({1, -1, 1, 1}) / 200 - centred * (invstd * invstd * dot).view({1, -1, 1, 1}) / 200) *
                              invstd.view({1, -1, 1, 1});
        return std::make_tuple(dx, dot * invstd, sum_dy * 2);
      },
      meta({8, 16, 5, 5}), meta({8, 16, 5, 5}), meta({16}), meta({16}));
  CHECK(s.plan.kernels.size() == 2);
  CHECK(s.lines_with("reads the same inputs; moved before node") == 2);
  CHECK(s.plan.extern_reasons.empty());
}

TEST_CASE("scheduler: a value that no kernel can compute runs as an extern call, decided once", "[scheduler]") {
  // Without normalization row kernels (CUDA's capabilities), a softmax over dim 0 reads its statistics
  // at an index no kernel's rows match: it runs as ATen runs it, and the + 1 is a kernel of its own.
  const auto s = schedule_of([](const at::Tensor& x) { return at::softmax(x, 0) + 1; }, meta({64, 32}));
  REQUIRE(s.lines_with("runs as an extern call: no kernel can compute it") == 1);
  REQUIRE(s.plan.extern_reasons.size() == 1);
  CHECK(s.plan.extern_reasons[0].find("softmax") != std::string::npos);
  CHECK(s.plan.kernels.size() == 1);
}

TEST_CASE("scheduler: layer_norm's statistics are placed before the output that reads them", "[scheduler]") {
  // native_layer_norm's three results are returned: the output's kernel reads mean and rstd from their
  // buffers, so the statistics are computed by a kernel before it.
  const auto s = schedule_of(
      [](const at::Tensor& x) {
        auto [out, mean, rstd] = at::native_layer_norm(x, {32}, {}, {}, 1e-5);
        return std::make_tuple(out, mean, rstd);
      },
      at::randn({64, 32}));  // (meta tensors have no native_layer_norm kernel in C++)
  // rstd before the output, then mean before rstd (their kernel reads mean): two decisions, two kernels.
  CHECK(s.lines_with("is placed before") == 2);
  REQUIRE(s.plan.kernels.size() == 2);
  CHECK(s.plan.kernels[0].outputs.size() == 2);
  CHECK(s.plan.kernels[1].outputs.size() == 1);
  CHECK(s.plan.extern_reasons.empty());

  // Every layer's layer_norm alike: the two decisions hold for all of them (not two attempts per layer).
  const auto layers = schedule_of(
      [](const at::Tensor& x) {
        std::vector<at::Tensor> results;
        at::Tensor h = x;
        for (int layer = 0; layer < 4; ++layer) {
          auto [out, mean, rstd] = at::native_layer_norm(h, {32}, {}, {}, 1e-5);
          results.insert(results.end(), {out, mean, rstd});
          h = out.relu();
        }
        results.push_back(h);
        return results;
      },
      at::randn({64, 32}));
  CHECK(layers.lines_with("is placed before") == 2);
  CHECK(layers.plan.kernels.size() == 2);  // as one layer's: each layer reduces the same rows, so the rows fuse across layers
  CHECK(layers.plan.extern_reasons.empty());
}

TEST_CASE("scheduler: values of another iteration space start a kernel of their own", "[scheduler]") {
  const auto s = schedule_of([](const at::Tensor& x, const at::Tensor& y) { return std::make_tuple(x.sin() * 2, y.cos() + 1); },
                             meta({64, 32}), meta({7, 5}));
  CHECK(s.plan.kernels.size() == 2);
  CHECK(s.lines_with("cannot fuse") == 1);
  CHECK(s.lines_with("is stored to a buffer") == 0);
}

TEST_CASE("scheduler: a value read by several nodes and computed from many buffers is stored once", "[scheduler]") {
  // A residual stream: each sum is read by the next sum and by a layer's own op. Inlined everywhere, the
  // last consumers would read every earlier buffer again.
  auto residual = [](const at::Tensor& x, const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
    const at::Tensor r1 = x + a, r2 = r1 + b, r3 = r2 + c;
    return std::make_tuple(r1.sin(), r2.cos(), r3.exp(), r3.tanh());
  };
  const auto s = schedule_of(residual, meta({64, 32}), meta({64, 32}), meta({64, 32}), meta({64, 32}));
  CHECK(s.lines_with("read by several nodes, computed from 4 buffers or more") == 1);  // r3 (x, a, b, c)
  // Two or three sources: inlined into each consumer, as before.
  auto short_chain = [](const at::Tensor& x, const at::Tensor& a) {
    const at::Tensor r = x + a;
    return std::make_tuple(r.sin(), r.cos());
  };
  CHECK(schedule_of(short_chain, meta({64, 32}), meta({64, 32})).lines_with("read by several nodes") == 0);
}
