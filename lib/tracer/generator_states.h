// The states of the default random generators a call may draw from (the CPU's and those of the CUDA
// devices its tensors are on). A trace draws for real; when its result is not the one returned (it
// failed and the call runs eagerly, or a training trace is followed by the eager call whose autograd
// graph the user gets), the draws are undone so that the call draws exactly once, as in eager.
#pragma once
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <vector>

namespace jitc::tracer {

class GeneratorStates {
 public:
  explicit GeneratorStates(const std::vector<c10::Device>& devices);
  void restore() const;

 private:
  std::vector<std::pair<at::Generator, at::Tensor>> saved_;
};

}  // namespace jitc::tracer
