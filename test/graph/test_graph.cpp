// Tests of the graph layer: the canonical text and DOT views, the verifier, dead-code and common-
// subexpression elimination, and the two-trace generalization to symbolic sizes (fit / generalize).
// Graphs are built by running the real tracer (tracer::trace) on small callables.
#include <catch2/catch.hpp>

#include "support/trace_of.h"

#include "graph/generalize.h"
#include "graph/graph.h"
#include "graph/passes.h"
#include "tracer/trace.h"

#include <jitc/detail/leaves.h>
#include <jitc/errors.h>

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

using jitc::graph::Graph;
using jitc::graph::SymExpr;
using jitc::graph::SymbolValues;

namespace {

using jitc::testing::trace_of;

template <class F, class... Args>
Graph graph_of(F fn, const Args&... args) {
  return trace_of(fn, args...).graph;
}

std::vector<std::string> op_names(const Graph& g) {
  std::vector<std::string> names;
  for (const auto& n : g.nodes) names.push_back(n.name());
  return names;
}

size_t count_op(const Graph& g, const std::string& name) {
  size_t n = 0;
  for (const auto& node : g.nodes) n += node.name() == name;
  return n;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

// ---- canonical text and DOT --------------------------------------------------------------------------

TEST_CASE("to_text prints the canonical text of x*2+1 on f32[2,3]", "[graph]") {
  const auto x = at::randn({2, 3});
  const Graph g = graph_of([](const at::Tensor& t) { return t * 2 + 1; }, x);
  const std::string expected =
      "graph(%0: f32[2, 3]{3, 1} arg):\n"
      "  %1: f32[2, 3]{3, 1} = aten::mul.Scalar(%0, 2)\n"
      "  %2: f32[2, 3]{3, 1} = aten::add.Scalar(%1, 1, 1)\n"
      "  return (%2)\n";
  CHECK(jitc::graph::to_text(g) == expected);
}

TEST_CASE("to_text shows dtypes, views with offsets and non-tensor result slots", "[graph]") {
  const auto x = at::arange(12, at::kLong).view({3, 4});
  auto fn = [](const at::Tensor& t) { return std::make_tuple(t.select(0, 1), t.size(0) * 2); };
  const auto outcome = trace_of(fn, x);
  const std::string text = jitc::graph::to_text(outcome.graph);
  INFO(text);
  CHECK(contains(text, "%0: i64[3, 4]{4, 1} arg"));
  CHECK(contains(text, "%1: i64[4]{1}+4 = aten::select.int(%0, 0, 1)"));
  CHECK(contains(text, "return (%1, _)"));
  // The result the caller gets is eager's.
  REQUIRE(outcome.result.size() == 2);
  CHECK(at::equal(outcome.result[0].tensor, x.select(0, 1)));
  CHECK(outcome.result[1].i == 6);
}

TEST_CASE("to_text is the same for two traces of the same callable at the same sizes", "[graph]") {
  auto fn = [](const at::Tensor& a, const at::Tensor& b) { return (a.matmul(b) + a.sum()).relu(); };
  const Graph g1 = graph_of(fn, at::randn({3, 4}), at::randn({4, 5}));
  const Graph g2 = graph_of(fn, at::randn({3, 4}), at::randn({4, 5}));
  CHECK(jitc::graph::to_text(g1) == jitc::graph::to_text(g2));
}

TEST_CASE("to_dot emits a Graphviz digraph naming the ops", "[graph]") {
  const Graph g = graph_of([](const at::Tensor& t) { return t.sin() + t; }, at::randn({4}));
  const std::string dot = jitc::graph::to_dot(g);
  CHECK(contains(dot, "digraph"));
  CHECK(contains(dot, "aten::sin"));
  CHECK(contains(dot, "aten::add.Tensor"));
  CHECK(dot.back() == '\n');
  CHECK(contains(dot, "}"));
}

TEST_CASE("dtype_name gives the short names used in text", "[graph]") {
  CHECK(std::string(jitc::graph::dtype_name(at::kFloat)) == "f32");
  CHECK(std::string(jitc::graph::dtype_name(at::kBFloat16)) == "bf16");
  CHECK(std::string(jitc::graph::dtype_name(at::kLong)) == "i64");
  CHECK(std::string(jitc::graph::dtype_name(at::kBool)) == "b8");
  CHECK(std::string(jitc::graph::dtype_name(at::kHalf)) == "f16");
}

// ---- verifier ------------------------------------------------------------------------------------------

TEST_CASE("verify accepts traced graphs and their DCE/CSE results", "[graph]") {
  auto fn = [](const at::Tensor& x, const at::Tensor& y) {
    auto v = x.view({-1});
    auto a = v.sin() + y.view({-1}).cos();
    x.add_(1);
    auto parts = a.chunk(2);
    (void)x.exp();  // dead
    return std::make_tuple(parts[0] * parts[1], v.sin(), v.sin());
  };
  const Graph g = graph_of(fn, at::randn({2, 4}), at::randn({2, 4}));
  REQUIRE_NOTHROW(jitc::graph::verify(g));
  REQUIRE_NOTHROW(jitc::graph::verify(jitc::graph::eliminate_dead_code(g)));
  REQUIRE_NOTHROW(jitc::graph::verify(jitc::graph::eliminate_common_subexpressions(g)));
  REQUIRE_NOTHROW(
      jitc::graph::verify(jitc::graph::eliminate_common_subexpressions(jitc::graph::eliminate_dead_code(g))));
}

TEST_CASE("verify throws InternalError on a corrupted graph", "[graph]") {
  Graph g = graph_of([](const at::Tensor& x) { return (x + 1).relu(); }, at::randn({3}));
  REQUIRE(g.nodes.size() == 2);
  REQUIRE_NOTHROW(jitc::graph::verify(g));

  SECTION("a node uses a value that does not exist") {
    g.nodes[1].args[0].value = 99;
    CHECK_THROWS_AS(jitc::graph::verify(g), jitc::InternalError);
  }
  SECTION("a node uses a value before it is defined") {
    g.nodes[0].args[0].value = g.nodes[1].outputs[0].values[0];
    CHECK_THROWS_AS(jitc::graph::verify(g), jitc::InternalError);
  }
  SECTION("a tensor argument has no value") {
    g.nodes[0].args[0].value = jitc::graph::kNoValue;
    CHECK_THROWS_AS(jitc::graph::verify(g), jitc::InternalError);
  }
  SECTION("a value names another producer") {
    g.values[g.nodes[1].outputs[0].values[0]].producer = 0;
    CHECK_THROWS_AS(jitc::graph::verify(g), jitc::InternalError);
  }
  SECTION("a node redefines a value") {
    g.nodes[1].outputs[0].values[0] = g.nodes[0].outputs[0].values[0];
    CHECK_THROWS_AS(jitc::graph::verify(g), jitc::InternalError);
  }
  SECTION("a node has fewer arguments than its schema") {
    g.nodes[0].args.pop_back();
    CHECK_THROWS_AS(jitc::graph::verify(g), jitc::InternalError);
  }
  SECTION("a graph output is unknown") {
    g.outputs[0] = 42;
    CHECK_THROWS_AS(jitc::graph::verify(g), jitc::InternalError);
  }
}

// ---- dead-code elimination -----------------------------------------------------------------------------

TEST_CASE("eliminate_dead_code removes unused pure ops", "[graph]") {
  const Graph g = graph_of(
      [](const at::Tensor& x) {
        (void)x.cos().exp();  // a dead chain
        auto unused_view = x.view({-1});
        (void)unused_view;
        return x.sin();
      },
      at::randn({2, 3}));
  REQUIRE(count_op(g, "aten::cos") == 1);
  const Graph d = jitc::graph::eliminate_dead_code(g);
  CHECK(op_names(d) == std::vector<std::string>{"aten::sin"});
  REQUIRE(d.outputs.size() == 1);
  CHECK(d.values[d.outputs[0]].producer == 0);
  CHECK(d.inputs.size() == g.inputs.size());
  REQUIRE_NOTHROW(jitc::graph::verify(d));
}

TEST_CASE("eliminate_dead_code keeps unused in-place ops and RNG ops", "[graph]") {
  const Graph g = graph_of(
      [](const at::Tensor& x) {
        auto t = x * 2;       // only feeds an in-place op
        t.add_(1);            // unused in-place on a temporary
        x.mul_(3);            // unused in-place on the argument
        (void)at::randn_like(x);  // unused RNG op: consumes the generator as eager does
        (void)x.cos();        // unused pure op
        return x.sum();
      },
      at::randn({4}));
  const Graph d = jitc::graph::eliminate_dead_code(g);
  INFO(jitc::graph::to_text(d));
  CHECK(count_op(d, "aten::cos") == 0);
  CHECK(count_op(d, "aten::mul.Scalar") == 1);
  CHECK(count_op(d, "aten::add_.Scalar") == 1);
  CHECK(count_op(d, "aten::mul_.Scalar") == 1);
  CHECK(count_op(d, "aten::randn_like") == 1);
  CHECK(count_op(d, "aten::sum") == 1);
  CHECK(d.nodes.size() == g.nodes.size() - 1);
  REQUIRE_NOTHROW(jitc::graph::verify(d));
}

TEST_CASE("a scalar an op returns is checked on replay and survives DCE even when unused", "[graph]") {
  auto fn = [](const at::Tensor& x, const at::Tensor& y) {
    (void)x.is_same_size(y);  // the callable could branch on it
    return x + 1;
  };
  const Graph g = jitc::graph::eliminate_dead_code(trace_of(fn, at::ones({2}), at::ones({2})).graph);
  const std::string text = jitc::graph::to_text(g);
  INFO(text);
  CHECK(contains(text, "aten::is_same_size(%0, %1)  # checked: == True"));
}

// ---- common-subexpression elimination ----------------------------------------------------------------

TEST_CASE("eliminate_common_subexpressions merges identical pure ops and their users", "[graph]") {
  const Graph g = graph_of(
      [](const at::Tensor& x) { return std::make_tuple((x.sin() + 1) * (x.sin() + 1), x.sin() + 2); }, at::randn({5}));
  REQUIRE(count_op(g, "aten::sin") == 3);
  const Graph c = jitc::graph::eliminate_common_subexpressions(g);
  INFO(jitc::graph::to_text(c));
  CHECK(count_op(c, "aten::sin") == 1);
  CHECK(count_op(c, "aten::add.Scalar") == 2);  // +1 merged, +2 differs by a constant
  REQUIRE(c.outputs.size() == 2);
  CHECK(c.outputs[0] != c.outputs[1]);
  REQUIRE_NOTHROW(jitc::graph::verify(c));
}

TEST_CASE("eliminate_common_subexpressions keeps identical results apart: the caller gets distinct tensors", "[graph]") {
  const Graph g = graph_of([](const at::Tensor& x) { return std::make_tuple(x.sin() + 1, x.sin() + 1); }, at::randn({5}));
  const Graph c = jitc::graph::eliminate_common_subexpressions(g);
  INFO(jitc::graph::to_text(c));
  CHECK(count_op(c, "aten::sin") == 1);
  REQUIRE(c.outputs.size() == 2);
  CHECK(c.outputs[0] != c.outputs[1]);
}

TEST_CASE("eliminate_common_subexpressions does not merge reads of a view across a write", "[graph]") {
  const Graph g = graph_of(
      [](const at::Tensor& x) {
        auto v = x[0];
        auto before = v.sin();
        x.add_(1);
        auto after = v.sin();  // same value id as the first read, but the memory changed
        return std::make_tuple(before, after);
      },
      at::randn({3, 4}));
  REQUIRE(count_op(g, "aten::sin") == 2);
  // Both reads name the same graph value: only the write to its storage keeps them apart.
  std::vector<const jitc::graph::Node*> sins;
  for (const auto& n : g.nodes)
    if (n.name() == "aten::sin") sins.push_back(&n);
  REQUIRE(sins.size() == 2);
  CHECK(sins[0]->args[0].value == sins[1]->args[0].value);
  const Graph c = jitc::graph::eliminate_common_subexpressions(g);
  INFO(jitc::graph::to_text(c));
  CHECK(count_op(c, "aten::sin") == 2);
  CHECK(c.outputs[0] != c.outputs[1]);
}

TEST_CASE("eliminate_common_subexpressions keeps RNG ops, views and in-place ops apart", "[graph]") {
  const Graph g = graph_of(
      [](const at::Tensor& x) {
        auto r1 = at::randn_like(x);
        auto r2 = at::randn_like(x);
        auto v1 = x.view({-1});
        auto v2 = x.view({-1});
        auto t = x * 1;
        t.add_(1);
        t.add_(1);
        return std::make_tuple(r1, r2, v1, v2, t);
      },
      at::randn({2, 2}));
  const Graph c = jitc::graph::eliminate_common_subexpressions(g);
  INFO(jitc::graph::to_text(c));
  CHECK(count_op(c, "aten::randn_like") == 2);
  CHECK(count_op(c, "aten::view") == 2);
  CHECK(count_op(c, "aten::add_.Scalar") == 2);
  CHECK(c.nodes.size() == g.nodes.size());
}

TEST_CASE("same_constant compares doubles bitwise and scalars by type", "[graph]") {
  using jitc::graph::same_constant;
  CHECK(same_constant(c10::IValue(2), c10::IValue(2)));
  CHECK_FALSE(same_constant(c10::IValue(2), c10::IValue(3)));
  CHECK_FALSE(same_constant(c10::IValue(2), c10::IValue(2.0)));
  CHECK(same_constant(c10::IValue(1.5), c10::IValue(1.5)));
  CHECK_FALSE(same_constant(c10::IValue(0.0), c10::IValue(-0.0)));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(same_constant(c10::IValue(nan), c10::IValue(nan)));
  CHECK(same_constant(c10::IValue(std::vector<int64_t>{1, 2}), c10::IValue(std::vector<int64_t>{1, 2})));
  CHECK_FALSE(same_constant(c10::IValue(std::vector<int64_t>{1, 2}), c10::IValue(std::vector<int64_t>{2, 1})));
  CHECK(same_constant(c10::IValue(), c10::IValue()));
  const auto t = at::ones({2});
  CHECK(same_constant(c10::IValue(t), c10::IValue(t)));
  CHECK_FALSE(same_constant(c10::IValue(t), c10::IValue(at::ones({2}))));  // tensors by identity
}

// ---- fit -------------------------------------------------------------------------------------------------

TEST_CASE("fit finds k*s, s + c and s*s forms of one symbol", "[graph]") {
  using jitc::graph::fit;
  const SymbolValues s{{4}, {8}};
  const int64_t values[] = {7};  // evaluate at a third size

  auto two_s = fit(8, 16, s);
  REQUIRE(two_s);
  CHECK(*two_s == SymExpr::monomial(2, 0));
  CHECK(two_s->to_string() == "2*s0");
  CHECK(two_s->eval(values) == 14);

  auto plus_one = fit(5, 9, s);
  REQUIRE(plus_one);
  CHECK(*plus_one == SymExpr::monomial(1, 0, -1, 1));
  CHECK(plus_one->to_string() == "s0 + 1");
  CHECK(plus_one->eval(values) == 8);

  auto square = fit(16, 64, s);
  REQUIRE(square);
  CHECK(*square == SymExpr::monomial(1, 0, 0));
  CHECK(square->to_string() == "s0*s0");
  CHECK(square->eval(values) == 49);

  auto identity = fit(4, 8, s);
  REQUIRE(identity);
  CHECK(identity->to_string() == "s0");

  auto minus = fit(3, 7, s);
  REQUIRE(minus);
  CHECK(minus->to_string() == "s0 - 1");
}

TEST_CASE("fit keeps equal values constant and rejects unexplained or ambiguous ones", "[graph]") {
  using jitc::graph::fit;
  const SymbolValues s{{4}, {8}};
  auto same = fit(7, 7, s);
  REQUIRE(same);
  CHECK(same->is_constant());
  CHECK(*same == SymExpr::constant(7));

  CHECK_FALSE(fit(3, 5, s));  // neither k*s, s + c nor k*s*s

  // Two symbols with proportional values: 8 -> 12 is 4*s0 and 2*s1 alike.
  const SymbolValues proportional{{2, 4}, {3, 6}};
  CHECK_FALSE(fit(8, 12, proportional));

  // Two unrelated symbols: s0*s1 is the only explanation of 24 -> 80.
  const SymbolValues two{{8, 3}, {16, 5}};
  auto product = fit(24, 80, two);
  REQUIRE(product);
  CHECK(*product == SymExpr::monomial(1, 0, 1));
  CHECK(product->to_string() == "s0*s1");
}

TEST_CASE("fit_line also finds k*s + c in one symbol for storage offsets", "[graph]") {
  using jitc::graph::fit_line;
  const SymbolValues s{{4}, {8}};
  auto rows_from_end = fit_line(24, 72, s);  // x[-2:] of [s, 12]: 12 * (s - 2)
  REQUIRE(rows_from_end);
  CHECK(*rows_from_end == SymExpr::monomial(12, 0, -1, -24));
  const int64_t at_seven[] = {7};
  CHECK(rows_from_end->eval(at_seven) == 60);
  CHECK(*fit_line(8, 16, s) == SymExpr::monomial(2, 0));  // what fit finds comes first
  CHECK_FALSE(fit_line(3, 6, s));  // 3/4 per unit of s is no integer line
  const SymbolValues two{{4, 10}, {8, 14}};  // both symbols grow by 4: 12*s0 - 24 and 12*s1 - 96 alike
  CHECK_FALSE(fit_line(24, 72, two));
}

TEST_CASE("generalize fits the storage offset of a slice from the end of a dynamic dim", "[graph]") {
  auto fn = [](const at::Tensor& x) { return x.slice(0, -2).relu(); };
  std::string why;
  auto g = jitc::graph::generalize(graph_of(fn, at::randn({4, 12})), graph_of(fn, at::randn({6, 12})), SymbolValues{{4}, {6}}, &why);
  INFO(why);
  REQUIRE(g);
  bool found = false;
  for (const auto& v : g->values) found = found || v.meta.storage_offset == SymExpr::monomial(12, 0, -1, -24);
  CHECK(found);
}

// ---- generalize ------------------------------------------------------------------------------------------

TEST_CASE("generalize turns two traces of a size-dependent view into a symbolic graph", "[graph]") {
  auto fn = [](const at::Tensor& x) { return x.view({x.size(0) * 4, -1}).relu(); };
  const Graph a = graph_of(fn, at::randn({4, 8}));
  const Graph b = graph_of(fn, at::randn({6, 8}));
  std::string why;
  auto g = jitc::graph::generalize(a, b, SymbolValues{{4}, {6}}, &why);
  INFO(why);
  REQUIRE(g);
  CHECK(g->num_symbols == 1);
  const std::string text = jitc::graph::to_text(*g);
  INFO(text);
  CHECK(contains(text, "s0"));
  CHECK(contains(text, "%0: f32[s0, 8]{8, 1} arg"));
  CHECK(contains(text, "aten::view(%0, [4*s0, -1])"));
  CHECK(contains(text, "f32[4*s0, 2]{2, 1}"));
  REQUIRE_NOTHROW(jitc::graph::verify(*g));
  // The view's size argument evaluates to the right list at a third size.
  const auto& view = g->nodes[0];
  REQUIRE(view.name() == "aten::view");
  REQUIRE(view.args[1].symbolic.size() == 2);
  const int64_t at10[] = {10};
  CHECK(view.args[1].symbolic[0].eval(at10) == 40);
  CHECK(view.args[1].symbolic[1].eval(at10) == -1);
}

TEST_CASE("generalize refuses traces with different ops", "[graph]") {
  const Graph a = graph_of([](const at::Tensor& x) { return x * 2; }, at::randn({4, 8}));
  const Graph b = graph_of([](const at::Tensor& x) { return x + 2; }, at::randn({6, 8}));
  std::string why;
  CHECK_FALSE(jitc::graph::generalize(a, b, SymbolValues{{4}, {6}}, &why));
  CHECK_FALSE(why.empty());
}

TEST_CASE("generalize refuses an integer argument the sizes do not explain", "[graph]") {
  // 3 at size 4 and 7 at size 6: neither k*s, s + c nor k*s*s.
  auto fn = [](const at::Tensor& x) { return x.narrow(1, 0, x.size(0) == 4 ? 3 : 7); };
  const Graph a = graph_of(fn, at::randn({4, 8}));
  const Graph b = graph_of(fn, at::randn({6, 8}));
  std::string why;
  CHECK_FALSE(jitc::graph::generalize(a, b, SymbolValues{{4}, {6}}, &why));
  INFO(why);
  CHECK(contains(why, "3 vs 7"));
}
