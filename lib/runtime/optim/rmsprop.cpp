// jitc::optim::RMSprop: torch::optim's RMSprop step (torch/csrc/api/src/optim/rmsprop.cpp) with the
// learning rate as a tensor, so that each step runs the same compiled graph.
#include "runtime/optim/compiled_updates.h"

#include <ATen/ATen.h>

namespace jitc::optim {

namespace {

using detail::CompiledUpdates;
using detail::Hyperparameters;

// The lists: parameters, gradients, square averages, momentum buffers (momentum only), gradient averages
// (centered only). numbers: alpha, eps, weight decay, momentum; flags: centered.
void rmsprop_update(const std::vector<at::Tensor>& t, const at::Tensor& lr, const Hyperparameters& hyper) {
  const auto [alpha, eps, weight_decay, momentum] = hyper.numbers;
  const bool centered = hyper.flags[0];
  const size_t lists = 3 + (momentum > 0) + centered, n = t.size() / lists;
  const auto list = [&](size_t k, size_t i) -> const at::Tensor& { return t[k * n + i]; };
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor &p = list(0, i), &square_avg = list(2, i);
    at::Tensor grad = list(1, i);
    if (weight_decay != 0) grad = grad.add(p, weight_decay);
    square_avg.mul_(alpha).addcmul_(grad, grad, 1 - alpha);
    at::Tensor avg;
    if (centered) {
      const at::Tensor& grad_avg = list(lists - 1, i);
      grad_avg.mul_(alpha).add_(grad, 1 - alpha);
      avg = square_avg.addcmul(grad_avg, grad_avg, -1).sqrt_().add_(eps);
    } else {
      avg = square_avg.sqrt().add_(eps);
    }
    if (momentum > 0) {
      const at::Tensor& buf = list(3, i);
      buf.mul_(momentum).addcdiv_(grad, avg);
      p.add_(lr.neg() * detail::in_op_math(buf));  // add_(buf, -lr)
    } else {
      p.add_(lr.neg() * detail::in_op_math(grad) /
             detail::in_op_math(avg));  // addcdiv_(grad, avg, -lr): ATen computes p + value * grad / avg
    }
  }
}

// torch::optim's own step where a parameter has no state yet (or lacks a buffer its options now ask
// for), a gradient is sparse, or a group spans devices.
bool torch_steps_instead(torch::optim::Optimizer& opt) {
  for (auto& group : opt.param_groups()) {
    if (detail::spans_devices(group)) return true;
    const auto& options = static_cast<torch::optim::RMSpropOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto* state_base = detail::state_of(opt, p);
      if (p.grad().is_sparse() || !state_base) return true;
      const auto& state = static_cast<torch::optim::RMSpropParamState&>(*state_base);
      if ((options.momentum() > 0 && !state.momentum_buffer().defined()) || (options.centered() && !state.grad_avg().defined()))
        return true;
    }
  }
  return false;
}

void step_group(torch::optim::Optimizer& opt, CompiledUpdates& updates, size_t g) {
  auto& group = opt.param_groups()[g];
  auto& options = static_cast<torch::optim::RMSpropOptions&>(group.options());
  std::vector<at::Tensor> lists[5];
  std::vector<torch::optim::RMSpropParamState*> states;
  for (auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    auto& state = static_cast<torch::optim::RMSpropParamState&>(*opt.state().at(p.unsafeGetTensorImpl()));
    lists[0].push_back(p);
    lists[1].push_back(p.grad());
    lists[2].push_back(state.square_avg());
    if (options.momentum() > 0) lists[3].push_back(state.momentum_buffer());
    if (options.centered()) lists[4].push_back(state.grad_avg());
    states.push_back(&state);
  }
  if (states.empty()) return;
  const Hyperparameters hyper{{options.alpha(), options.eps(), options.weight_decay(), options.momentum()}, {options.centered(), false}};
  updates.run(g, detail::concatenate(lists), updates.learning_rate(g, options.lr(), lists[0][0].device()), hyper);
  for (auto* state : states) state->step(state->step() + 1);
}

}  // namespace

RMSprop::RMSprop(const std::vector<torch::optim::OptimizerParamGroup>& param_groups, torch::optim::RMSpropOptions defaults,
                 Options compile_options)
    : WithCompiledUpdates(std::make_shared<CompiledUpdates>("jitc::optim::RMSprop", std::move(compile_options), rmsprop_update,
                                                            detail::same_but_lr<torch::optim::RMSpropOptions>),
                          param_groups, std::move(defaults)) {}
RMSprop::RMSprop(std::vector<at::Tensor> params, torch::optim::RMSpropOptions defaults, Options compile_options)
    : RMSprop({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults), std::move(compile_options)) {}

at::Tensor RMSprop::step(LossClosure closure) {
  return detail::compiled_step(
      *this, *updates_, closure, torch_steps_instead, [this] { torch::optim::RMSprop::step(); }, step_group);
}

}  // namespace jitc::optim
