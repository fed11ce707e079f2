// functionalize: the rewritten graph, replayed on fresh inputs, must give eager's results, write the
// same values into the arguments, and return views of arguments as real views.
#include "graph/functionalize.h"
#include "graph/passes.h"
#include "runtime/eager_replay.h"
#include "tracer/trace.h"

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <functional>

namespace {

using Body = std::function<at::Tensor(std::vector<at::Tensor>&)>;

jitc::graph::Graph trace(const Body& body, std::vector<at::Tensor> inputs) {
  jitc::detail::Leaves leaves;
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    leaves.push_back(jitc::detail::tensor_leaf(inputs[i], static_cast<int>(i)));
    names.push_back("args[" + std::to_string(i) + "]");
  }
  jitc::detail::Invoker invoker = [&](c10::ArrayRef<jitc::detail::Leaf> l) {
    std::vector<at::Tensor> args;
    for (const auto& leaf : l) args.push_back(*leaf.tensor);
    jitc::detail::ResultLeaves out;
    jitc::detail::ResultCodec<at::Tensor>::flatten(out, body(args));
    return out;
  };
  return jitc::tracer::trace(invoker, leaves, names, false).graph;
}

at::Tensor run(const jitc::graph::Graph& g, const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> values(g.values.size());
  for (const auto& in : g.inputs) values[in.value] = inputs.at(in.leaf);
  std::string why;
  REQUIRE(jitc::runtime::replay(g, {&values, nullptr}, &why));
  return values[g.outputs.at(0)];
}

std::vector<at::Tensor> clones(const std::vector<at::Tensor>& xs) {
  std::vector<at::Tensor> out;
  for (const auto& x : xs) out.push_back(x.clone());
  return out;
}

// Traces on clones, functionalizes, replays on other clones, and compares with eager on a third set.
jitc::graph::Graph check_against_eager(const Body& body, const std::vector<at::Tensor>& inputs) {
  const auto raw = trace(body, clones(inputs));
  std::string why;
  auto functional = jitc::graph::functionalize(raw, &why);
  INFO(why);
  REQUIRE(functional);
  INFO(jitc::graph::to_text(*functional));
  jitc::graph::verify(*functional);
  CHECK(jitc::graph::is_functional(*functional));
  auto eager_inputs = clones(inputs);
  auto eager_args = eager_inputs;
  const auto expected = body(eager_args);
  auto replay_inputs = clones(inputs);
  const auto got = run(*functional, replay_inputs);
  CHECK(at::equal(got, expected));
  for (size_t i = 0; i < inputs.size(); ++i) CHECK(at::equal(replay_inputs[i], eager_inputs[i]));
  if (expected.is_alias_of(eager_inputs[0])) CHECK(got.is_alias_of(replay_inputs[0]));
  return *functional;
}

}  // namespace

TEST_CASE("an in-place op on an argument becomes out-of-place plus a write-back", "[functionalize]") {
  const auto g = check_against_eager(
      [](auto& a) {
        a[0].add_(1);
        return a[0] * 2;
      },
      {at::randn({3, 4})});
  const auto text = jitc::graph::to_text(g);
  CHECK_THAT(text, Catch::Contains("aten::add.Scalar") && Catch::Contains("aten::copy_"));
  CHECK_THAT(text, !Catch::Contains("aten::add_"));
}

TEST_CASE("a write through select becomes select_scatter", "[functionalize]") {
  const auto g = check_against_eager(
      [](auto& a) {
        a[0].select(0, 1).mul_(2);
        return a[0].sum();
      },
      {at::randn({3, 4})});
  CHECK_THAT(jitc::graph::to_text(g), Catch::Contains("aten::select_scatter"));
}

TEST_CASE("a result that is a view of a written argument is returned as a view", "[functionalize]") {
  check_against_eager(
      [](auto& a) {
        auto v = a[0].slice(1, 0, 2);
        v.add_(1);
        return v;
      },
      {at::randn({3, 4})});
}

TEST_CASE("writes through chains of views scatter back to the base", "[functionalize]") {
  check_against_eager(
      [](auto& a) {
        a[0].view({-1}).narrow(0, 1, 5).zero_();
        return a[0].clone();
      },
      {at::randn({3, 4})});
  check_against_eager(
      [](auto& a) {
        a[0].t().select(0, 2).fill_(7);
        return a[0] + 1;
      },
      {at::randn({3, 4})});
  check_against_eager(
      [](auto& a) {
        a[0].permute({2, 0, 1})[1].sub_(3);
        return a[0] * 1;
      },
      {at::randn({2, 3, 4})});
}

TEST_CASE("narrow with a negative start scatters back to the right rows", "[functionalize]") {
  check_against_eager(
      [](auto& a) {
        a[0].narrow(0, -2, 2).zero_();
        return a[0] * 1;
      },
      {at::randn({5, 2})});
}

TEST_CASE("a view read after its base is written sees the new values", "[functionalize]") {
  check_against_eager(
      [](auto& a) {
        auto row = a[0][0];
        a[0].add_(1);
        return row * 1;
      },
      {at::randn({3, 4})});
}

TEST_CASE("writes into intermediates need no write-back", "[functionalize]") {
  const auto g = check_against_eager(
      [](auto& a) {
        auto y = a[0] * 1;
        y.t().add_(1);
        return y;
      },
      {at::randn({3, 4})});
  CHECK_THAT(jitc::graph::to_text(g), !Catch::Contains("aten::copy_"));
}

TEST_CASE("an in-place op keeps its target's dtype", "[functionalize]") {
  check_against_eager(
      [](auto& a) {
        a[0].add_(a[1]);
        return a[0] * 1;
      },
      {at::randn({4}), at::randn({4}, at::kDouble)});
}

TEST_CASE("copy_ into an argument becomes aten::copy plus a write-back", "[functionalize]") {
  const auto g = check_against_eager(
      [](auto& a) {
        a[0].copy_(a[1] * 2);
        return a[0] + 0;
      },
      {at::randn({2, 3}), at::randn({3})});
  CHECK_THAT(jitc::graph::to_text(g), Catch::Contains("aten::copy("));
}

TEST_CASE("writes through elements of split, chunk and unbind scatter into their base", "[functionalize]") {
  // An LSTM or GRU cell: in-place activations of chunks of one gates buffer, read afterwards through
  // their siblings and the buffer itself.
  check_against_eager(
      [](auto& a) {
        const at::Tensor gates = a[0] * 1;
        auto chunks = gates.unsafe_chunk(3, 1);
        chunks[0].sigmoid_();
        chunks[2].tanh_().mul_(chunks[0]);
        return gates + chunks[1].repeat({1, 3});
      },
      {at::randn({2, 12})});
  // Into an argument: the shorter last element of split, one row of unbind, split_with_sizes.
  check_against_eager(
      [](auto& a) {
        a[0].split(3, 1)[1].add_(1);
        a[0].unbind(0)[1].mul_(-2);
        a[0].split_with_sizes({1, 4}, 1)[0].zero_();
        auto rows = a[0].chunk(2, 0);
        return rows[1] * 3;
      },
      {at::randn({3, 5})});
}

TEST_CASE("in-place view ops on values and on views of arguments become views", "[functionalize]") {
  check_against_eager(
      [](auto& a) {
        at::Tensor y = a[0] * 2;
        y.transpose_(0, 1);
        y.add_(a[1]);
        y.unsqueeze_(0).squeeze_(0).t_();
        return y * 3;
      },
      {at::randn({2, 3}), at::randn({3, 2})});
  // A write through an argument's view after transpose_: it lands in the argument, transposed back.
  check_against_eager(
      [](auto& a) {
        at::Tensor v = a[0].narrow(0, 1, 2);
        v.t_();
        v.mul_(a[1]);
        return v + 1;
      },
      {at::randn({3, 4}), at::randn({4, 1})});
}

TEST_CASE("functionalize refuses what it cannot rewrite, with a reason", "[functionalize]") {
  std::string why;
  const auto x = at::randn({3, 4});
  CHECK_FALSE(jitc::graph::functionalize(trace(
                                             [](auto& a) {
                                               a[0].tensor_split(2)[1].zero_();
                                               return a[0] * 1;
                                             },
                                             {x.clone()}),
                                         &why));
  CHECK_THAT(why, Catch::Contains("split/unbind"));
  CHECK_FALSE(jitc::graph::functionalize(trace(
                                             [](auto& a) {
                                               a[0].t_();
                                               return a[0] * 1;
                                             },
                                             {x.clone()}),
                                         &why));
  CHECK_THAT(why, Catch::Contains("in place"));
  // Inputs sharing memory: refused where a node writes it, read as they are otherwise (a backward graph's
  // saved values are often views of one tensor).
  const auto shared = at::randn({4, 4});
  CHECK_FALSE(jitc::graph::functionalize(trace(
                                             [](auto& a) {
                                               a[1].add_(1);
                                               return a[0] + a[1];
                                             },
                                             {shared, shared.t()}),
                                         &why));
  CHECK_THAT(why, Catch::Contains("shares memory"));
  CHECK(jitc::graph::functionalize(trace([](auto& a) { return a[0] + a[1]; }, {shared, shared.t()}), &why));
}
