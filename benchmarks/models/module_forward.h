// A torch::nn module as the suite's callable: in eval mode, its floating-point parameters and buffers moved
// to the placement's device and dtype (integer buffers, such as a decoder's position, keep their dtype:
// torch::nn::Module::to(dtype) would convert them too). Included by the models' sources only.
#pragma once
#include "models/architectures.h"

#include <torch/nn/module.h>

namespace jitc::bench {

inline void place_module(torch::nn::Module& module, const Placement& place) {
  for (auto tensors : {module.parameters(), module.buffers()})
    for (auto& t : tensors) t.set_data(t.to(place.device, at::isFloatingType(t.scalar_type()) ? place.dtype : t.scalar_type()));
}

template <class M>
Forward forward_of(M module, const Placement& place) {
  module->eval();
  place_module(*module, place);
  return [impl = module.ptr()](const at::Tensor& x) { return impl->forward(x); };
}

template <class M>
Trainable trainable_of(M module, const Placement& place) {
  module->train();
  place_module(*module, place);
  return {[impl = module.ptr()](const at::Tensor& x) { return impl->forward(x); }, module.ptr()};
}

}  // namespace jitc::bench
