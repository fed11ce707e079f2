// The fixed workload list of bench_workloads (issue 3). benchmarks/peer_torch_compile.py builds the same
// workloads (names, shapes, ops, seeds) in Python for torch.compile; change both together.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

namespace jitc::bench {

// Workloads take one to three tensors and return one. Weights that a model would own (the MLP's linears,
// the ResNet block's convolutions and batch norms) are captured by the callable, as module parameters are.
using Fn1 = std::function<at::Tensor(const at::Tensor&)>;
using Fn2 = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;
using Fn3 = std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>;
using WorkloadFn = std::variant<Fn1, Fn2, Fn3>;

struct Workload {
  std::string name;
  std::string shapes;  // what the table's legend prints
  std::function<std::vector<at::Tensor>()> make_inputs;  // fresh float32 tensors, fixed seed
  WorkloadFn fn;
  // The roofline's numerator: arguments and captured weights read once, the result written once.
  int64_t min_bytes = 0;
  // Matmul and convolution workloads are bound by arithmetic, not memory: their % of copy bandwidth is
  // printed for completeness but is not the figure to judge them by.
  bool compute_bound = false;
};

// Every workload, in table order. Builds the captured weights (fixed seed); call under InferenceMode.
std::vector<Workload> make_workloads();

}  // namespace jitc::bench
