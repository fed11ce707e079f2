// The random differential test of compiled training (test_training_random.cpp on the CPU, its [cuda]
// case in test_training_cuda.cpp): the generated programs of the inference fuzzer
// (inductor/random_graphs.h) in float64 with inputs that require grad, reduced to a loss by fixed random
// tangents; the compiled call's loss and every input's gradient are compared with eager's.
#pragma once
#include "inductor/random_graphs.h"

#include <jitc/jitc.h>

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <vector>

namespace jitc::testing::random_training {

using random_graphs::generate;
using random_graphs::InPlace;
using random_graphs::input_data;
using random_graphs::interpret;
using random_graphs::Normalizations;
using random_graphs::Program;

struct LossAndGradients {
  at::Tensor loss;
  std::vector<at::Tensor> grads;
};

// The loss sum(out_k * tangent_k) of the program over fresh leaves holding `values`, and its gradients.
template <class F>
LossAndGradients loss_and_gradients(F&& loss_of, const std::vector<at::Tensor>& values) {
  std::vector<at::Tensor> leaves;
  for (const auto& v : values) leaves.push_back(v.detach().clone().requires_grad_(true));
  LossAndGradients s{loss_of(leaves), {}};
  s.loss.backward();
  for (const auto& l : leaves) s.grads.push_back(l.grad());
  return s;
}

// Strides agree where they mean something: a dim of size 1 is never stepped over (eager's gradient of a
// transpose keeps [9, 81, 1] for a [9, 1, 9] tensor; a kernel writes [9, 9, 1]).
inline bool same_layout(const at::Tensor& got, const at::Tensor& want) {
  if (!got.defined() || !want.defined()) return got.defined() == want.defined();
  if (got.sizes() != want.sizes()) return false;
  for (int64_t d = 0; d < got.dim(); ++d)
    if (got.size(d) > 1 && got.stride(d) != want.stride(d)) return false;
  return true;
}

// The values with row-major strides (an undefined gradient stays undefined).
inline at::Tensor standard_strides(const at::Tensor& t) { return t.defined() ? t.clone(at::MemoryFormat::Contiguous) : t; }

// Checks the compiled loss and gradients of `p` on `device` against eager's there; returns the compiled
// function's stats.
inline jitc::Stats check_gradients(const Program& p, at::Device device) {
  std::vector<at::Tensor> values;
  for (const auto& x : input_data(p, device)) values.push_back(x.to(at::kDouble));
  std::vector<at::Tensor> tangents;
  for (const auto& out : interpret(p, values)) tangents.push_back(at::randn(out.sizes(), at::dtype(at::kDouble).device(device)));
  auto loss_of = [p, tangents, device](const std::vector<at::Tensor>& xs) {
    const std::vector<at::Tensor> outs = interpret(p, xs);
    at::Tensor loss = at::zeros({}, at::dtype(at::kDouble).device(device));
    for (size_t k = 0; k < outs.size(); ++k) loss = loss + (outs[k] * tangents[k]).sum();
    return loss;
  };
  INFO(to_string(p));
  auto compiled = jitc::compile(loss_of);
  LossAndGradients want;
  try {
    want = loss_and_gradients(loss_of, values);
  } catch (const std::exception& e) {  // a value autograd saved, written in place afterwards: raise as eager does
    const std::string text = e.what();
    for (int call = 0; call < 2; ++call) CHECK_THROWS_WITH(loss_and_gradients(compiled, values), Catch::Contains(text.substr(0, text.find('['))));
    return compiled.stats();
  }
  for (int call = 0; call < 2; ++call) {  // the trace, then the compiled forward and backward
    INFO("call " << call);
    const LossAndGradients got = loss_and_gradients(compiled, values);
    CHECK(difference(got.loss, want.loss, {1e-9, 1e-9}) == "");
    REQUIRE(got.grads.size() == want.grads.size());
    for (size_t i = 0; i < got.grads.size(); ++i) {
      INFO("gradient of t" << i);
      CHECK(same_layout(got.grads[i], want.grads[i]));
      CHECK(difference(standard_strides(got.grads[i]), standard_strides(want.grads[i]), {1e-9, 1e-9}) == "");
    }
  }
  return compiled.stats();
}

}  // namespace jitc::testing::random_training
