// Dims merged through a division (collapse_dims.h, the CUDA target): every load and store of the merged
// kernel reads the address the unmerged kernel reads at the same element, at every element. Checked
// without a GPU by evaluating the kernels' index arithmetic.
#include "graph/functionalize.h"
#include "graph/passes.h"
#include "graph/reinplace.h"
#include "inductor/in_place_updates.h"
#include "inductor/index_analysis.h"
#include "inductor/scheduler.h"
#include "support/trace_of.h"

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace {

using jitc::inductor::Expr;
using jitc::inductor::Kernel;
using jitc::inductor::ScalarOp;

int64_t index_value(const Kernel& k, int i, const std::vector<int64_t>& vars) {
  const Expr& e = k.body[i];
  auto operand = [&](int o) { return index_value(k, o, vars); };
  switch (e.op) {
    case ScalarOp::kVar: return vars[e.var];
    case ScalarOp::kConst: return e.ivalue;
    case ScalarOp::kAdd: return operand(e.a) + operand(e.b);
    case ScalarOp::kSub: return operand(e.a) - operand(e.b);
    case ScalarOp::kMul: return operand(e.a) * operand(e.b);
    case ScalarOp::kDiv: return operand(e.a) / operand(e.b);
    default: FAIL("an index expression this test does not evaluate: op " << static_cast<int>(e.op)); return 0;
  }
}

// Per element, in row-major order over the kernel's outer then inner vars: buffer name and address of
// every load and store.
std::vector<std::string> accesses(const Kernel& k) {
  std::vector<int> order = k.outer_vars();
  for (int v : k.inner_vars()) order.push_back(v);
  std::vector<int64_t> extents;
  int64_t total = 1;
  for (int v : order) {
    extents.push_back(*jitc::inductor::integer_constant(k, k.vars[v].extent));
    total *= extents.back();
  }
  std::vector<std::string> out;
  std::vector<int64_t> vars(k.vars.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rest = flat;
    for (size_t d = order.size(); d-- > 0;) {
      vars[order[d]] = rest % extents[d];
      rest /= extents[d];
    }
    for (const Expr& e : k.body)
      if (e.op == ScalarOp::kLoad || e.op == ScalarOp::kStore)
        out.push_back(k.buffers[e.buffer].name + "[" + std::to_string(index_value(k, e.a, vars)) + "]");
  }
  return out;
}

// The kernels of fn's graph scheduled for the CPU (contiguous merges only) and for CUDA (its values'
// metadata on a CUDA device: merges by division too).
template <class F, class... T>
void check_merges(const std::string& name, bool expect_division, F fn, const T&... inputs) {
  INFO(name);
  const auto traced = jitc::testing::trace_of(fn, inputs...);
  auto g = jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(traced.graph));
  const auto on_cpu = jitc::inductor::schedule(g, "k", {});
  for (auto& v : g.values) v.meta.device = c10::Device(c10::kCUDA, 0);
  const auto on_cuda = jitc::inductor::schedule(g, "k", {});
  REQUIRE(on_cpu.kernels.size() == on_cuda.kernels.size());
  bool divided = false;
  for (size_t i = 0; i < on_cpu.kernels.size(); ++i) {
    const Kernel &unmerged = on_cpu.kernels[i].kernel, &merged = on_cuda.kernels[i].kernel;
    for (const Expr& e : merged.body) divided |= e.op == ScalarOp::kDiv;
    CHECK(accesses(merged) == accesses(unmerged));
  }
  CHECK(divided == expect_division);
}

template <class F, class... T>
void check_division_merges(const std::string& name, F fn, const T&... inputs) {
  check_merges(name, true, fn, inputs...);
}

}  // namespace

TEST_CASE("dims merged through a division read and write what the unmerged kernel does", "[inductor]") {
  auto cl = [](const at::Tensor& t) { return t.contiguous(at::MemoryFormat::ChannelsLast); };
  const auto x = cl(at::randn({2, 8, 5, 6})), y = cl(at::randn({2, 8, 5, 6})), m = at::randn({8}), v = at::rand({8}) + 1;
  check_division_merges(
      "a channels-last batch norm, add and relu (per-channel parameters)",
      [](const at::Tensor& x, const at::Tensor& y, const at::Tensor& m, const at::Tensor& v) {
        return at::relu(at::batch_norm(x, m, m, m, v, false, 0.1, 1e-5, true) + y);
      },
      x, y, m, v);
  check_division_merges(
      "an NCHW input copied channels-last",
      [](const at::Tensor& x) { return x.contiguous(at::MemoryFormat::ChannelsLast) + 1; }, at::randn({2, 3, 5, 7}));
  check_division_merges(
      "a transpose read, a broadcast along the middle dim",
      [](const at::Tensor& a, const at::Tensor& b) { return a.transpose(1, 2) * b; }, at::randn({3, 6, 5}),
      at::randn({3, 1, 6}));
}

TEST_CASE("a value stored once per row is not merged through a division", "[inductor]") {
  // SGD's updates of a Linear layer's weight [10, 64] and bias [10], stored into them in one kernel: the
  // bias is updated once per row; merged, every element of the row would update it again.
  auto sgd = [](const at::Tensor& lr, const at::Tensor& w, const at::Tensor& b, const at::Tensor& gw, const at::Tensor& gb) {
    w.sub_(gw * lr);
    b.sub_(gb * lr);
    return lr;
  };
  const auto traced = jitc::testing::trace_of(sgd, at::tensor(0.1), at::randn({10, 64}), at::randn({10}), at::randn({10, 64}),
                                              at::randn({10}));
  std::string why;
  auto g = jitc::graph::reinplace_input_updates(jitc::graph::eliminate_dead_code(*jitc::graph::functionalize(traced.graph, &why)));
  for (auto& v : g.values) v.meta.device = c10::Device(c10::kCUDA, 0);
  auto plan = jitc::inductor::schedule(g, "k", {});
  // The weight's update in place; the bias's, stored once per row and tile, goes through a buffer (read
  // and written in place, a row split over tiles would update it once per tile: in_place_updates.cpp).
  REQUIRE(jitc::inductor::store_input_updates_in_place(plan, g) == 1);
  bool row_store = false;
  for (const auto& k : plan.kernels) {
    const auto forms = jitc::inductor::affine_forms(k.kernel);
    for (const Expr& e : k.kernel.body) {
      CHECK(e.op != ScalarOp::kDiv);
      if (e.op == ScalarOp::kStore && k.kernel.inner_vars().size() == 1) row_store |= forms[e.a].coefficient[k.kernel.inner_vars()[0]] == 0;
    }
  }
  CHECK(row_store);  // the case has a store once per row (the bias's, fused with the weight's kernel)
}
