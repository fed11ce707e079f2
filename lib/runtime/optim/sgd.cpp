// jitc::optim::SGD: torch::optim's SGD step (torch/csrc/api/src/optim/sgd.cpp) with the learning rate as
// a tensor, so that each step runs the same compiled graph (torch::optim's writes through .data(), which a
// compiled function cannot replay).
#include "runtime/optim/compiled_updates.h"

#include <ATen/ATen.h>

namespace jitc::optim {

namespace {

using detail::CompiledUpdates;
using detail::Hyperparameters;

// The lists: parameters, gradients, momentum buffers (momentum only). numbers: momentum, dampening,
// weight decay; flags: nesterov.
void sgd_update(const std::vector<at::Tensor>& t, const at::Tensor& lr, const Hyperparameters& hyper) {
  const double momentum = hyper.numbers[0], dampening = hyper.numbers[1], weight_decay = hyper.numbers[2];
  const bool nesterov = hyper.flags[0];
  const size_t lists = momentum != 0 ? 3 : 2, n = t.size() / lists;
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor& p = t[i];
    at::Tensor d_p = t[n + i];
    if (weight_decay != 0) d_p = d_p.add(p, weight_decay);
    if (momentum != 0) {
      const at::Tensor& buf = t[2 * n + i];
      buf.mul_(momentum).add_(d_p, 1 - dampening);
      d_p = nesterov ? d_p.add(buf, momentum) : buf;
    }
    p.add_(lr.neg() * detail::in_op_math(d_p));  // add_(d_p, -lr): ATen's kernel computes p + alpha * d_p
  }
}

// torch::optim's step creates a momentum buffer as a copy of the first update; a sparse gradient it adds
// as such; a group over several devices.
bool torch_steps_instead(torch::optim::Optimizer& opt) {
  for (auto& group : opt.param_groups()) {
    if (detail::spans_devices(group)) return true;
    const bool momentum = static_cast<torch::optim::SGDOptions&>(group.options()).momentum() != 0;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (p.grad().is_sparse() || (momentum && !detail::state_of(opt, p))) return true;
    }
  }
  return false;
}

void step_group(torch::optim::Optimizer& opt, CompiledUpdates& updates, size_t g) {
  auto& group = opt.param_groups()[g];
  auto& options = static_cast<torch::optim::SGDOptions&>(group.options());
  std::vector<at::Tensor> lists[3];
  for (auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    lists[0].push_back(p);
    lists[1].push_back(p.grad());
    if (options.momentum() != 0)
      lists[2].push_back(static_cast<torch::optim::SGDParamState&>(*opt.state().at(p.unsafeGetTensorImpl())).momentum_buffer());
  }
  if (lists[0].empty()) return;
  const Hyperparameters hyper{{options.momentum(), options.dampening(), options.weight_decay(), 0}, {options.nesterov(), false}};
  updates.run(g, detail::concatenate(lists), updates.learning_rate(g, options.lr(), lists[0][0].device()), hyper);
}

}  // namespace

SGD::SGD(const std::vector<torch::optim::OptimizerParamGroup>& param_groups, torch::optim::SGDOptions defaults, Options compile_options)
    : WithCompiledUpdates(std::make_shared<CompiledUpdates>("jitc::optim::SGD", std::move(compile_options), sgd_update,
                                                            detail::same_but_lr<torch::optim::SGDOptions>),
                          param_groups, std::move(defaults)) {}
SGD::SGD(std::vector<at::Tensor> params, torch::optim::SGDOptions defaults, Options compile_options)
    : SGD({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults), std::move(compile_options)) {}

at::Tensor SGD::step(LossClosure closure) {
  return detail::compiled_step(
      *this, *updates_, closure, torch_steps_instead, [this] { torch::optim::SGD::step(); }, step_group);
}

}  // namespace jitc::optim
