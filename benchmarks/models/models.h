// The model suite (issue 25): models as a C++ team writes them with torch::nn, random weights from a
// fixed seed, in eval mode. benchmarks/models/peer_models.py builds the same models (names, shapes, ops)
// in Python for torch.compile; change both together. bench_models times them; test/e2e/test_models.cpp
// runs them at small shapes for parity.
#pragma once
#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

namespace jitc::bench {

struct Model {
  std::string name;    // "resnet18_b1"
  std::string shapes;  // for the table's legend
  std::function<at::Tensor()> make_input;
  // The module's forward: the callable jitc::compile takes (it holds the module; weights are captured).
  std::function<at::Tensor(const at::Tensor&)> forward;
  // Models with state between calls (a decoder's KV cache): back to the initial state. Empty otherwise.
  std::function<void()> reset;
};

enum class ModelScale {
  kBenchmark,  // the published configurations' shapes
  kTest,       // small shapes with the same structure, for parity tests
};

// What `call` (the model's forward, or its compiled form) returns from the model's initial state: one call's
// result for a stateless model; for one with state, the results of its first `steps` calls after a reset,
// stacked. Parity checks compare these.
at::Tensor results_from_start(const Model& model, const std::function<at::Tensor(const at::Tensor&)>& call, const at::Tensor& x,
                              int steps = 3);

// Every model of the suite, in table order, its weights and inputs on `device` in `dtype` (floating-point
// tensors only: token ids and targets stay int64). Call under c10::InferenceMode or NoGradGuard.
std::vector<Model> make_models(ModelScale scale, c10::Device device = c10::kCPU, c10::ScalarType dtype = c10::kFloat);

}  // namespace jitc::bench
