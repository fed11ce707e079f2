// jitc::optim::Adagrad: torch::optim's Adagrad step (torch/csrc/api/src/optim/adagrad.cpp) with its step
// counts and learning rates as tensors, so that each step runs the same compiled graph.
#include "runtime/optim/compiled_updates.h"

#include <ATen/ATen.h>

#include <optional>

namespace jitc::optim {

namespace {

using detail::CompiledUpdates;
using detail::Hyperparameters;

// The lists: parameters, gradients, sums, then the step counts: one per parameter, or one for them all
// (hyper.shared_step). numbers: lr decay, weight decay, eps.
void adagrad_update(const std::vector<at::Tensor>& t, const at::Tensor& lr, const Hyperparameters& hyper) {
  const double lr_decay = hyper.numbers[0], weight_decay = hyper.numbers[1], eps = hyper.numbers[2];
  const size_t n = hyper.shared_step ? (t.size() - 1) / 3 : t.size() / 4;
  // lr / (1 + (step - 1) * lr_decay) after the step's increment, in float64 as torch::optim computes it.
  const auto decayed_lr = [&](const at::Tensor& step) {
    step.add_(1);
    return lr / ((step - 1) * lr_decay + 1);
  };
  std::optional<at::Tensor> shared;
  if (hyper.shared_step) shared = decayed_lr(t.back());
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor &p = t[i], &sum = t[2 * n + i];
    at::Tensor grad = t[n + i];
    const at::Tensor clr = shared ? *shared : decayed_lr(t[3 * n + i]);
    if (weight_decay != 0) grad = grad.add(p, weight_decay);
    sum.addcmul_(grad, grad, 1.0);
    const at::Tensor std = sum.sqrt().add_(eps);
    p.add_(clr.neg() * detail::in_op_math(grad) / detail::in_op_math(std));  // addcdiv_(grad, std, -clr)
  }
}

// torch::optim's own step for sparse gradients (its sparse update) and groups over several devices. The
// state exists from the constructor on; a parameter added later without one is torch's to reject.
bool torch_steps_instead(torch::optim::Optimizer& opt) {
  for (auto& group : opt.param_groups()) {
    if (detail::spans_devices(group)) return true;
    for (auto& p : group.params())
      if (p.grad().defined() && (p.grad().is_sparse() || !detail::state_of(opt, p))) return true;
  }
  return false;
}

void step_group(torch::optim::Optimizer& opt, CompiledUpdates& updates, size_t g) {
  auto& group = opt.param_groups()[g];
  auto& options = static_cast<torch::optim::AdagradOptions&>(group.options());
  std::vector<at::Tensor> lists[4];
  std::vector<torch::optim::AdagradParamState*> states;
  std::vector<const void*> keys;
  std::vector<int64_t> counts;
  for (auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    auto& state = static_cast<torch::optim::AdagradParamState&>(*opt.state().at(p.unsafeGetTensorImpl()));
    lists[0].push_back(p);
    lists[1].push_back(p.grad());
    lists[2].push_back(state.sum());
    states.push_back(&state);
    keys.push_back(p.unsafeGetTensorImpl());
    counts.push_back(state.step());
  }
  if (states.empty()) return;
  const at::Device device = lists[0][0].device();
  lists[3] = updates.step_counts(g, keys, counts, device);
  const Hyperparameters hyper{
      {options.lr_decay(), options.weight_decay(), options.eps(), 0}, {false, false}, lists[3].size() < states.size()};
  updates.run(g, detail::concatenate(lists), updates.learning_rate(g, options.lr(), device), hyper);
  for (size_t i = 0; i < states.size(); ++i) {
    states[i]->step(counts[i] + 1);
    updates.counted(keys[i], counts[i] + 1);
  }
}

}  // namespace

Adagrad::Adagrad(const std::vector<torch::optim::OptimizerParamGroup>& param_groups, torch::optim::AdagradOptions defaults,
                 Options compile_options)
    : WithCompiledUpdates(std::make_shared<CompiledUpdates>("jitc::optim::Adagrad", std::move(compile_options), adagrad_update,
                                                            detail::same_but_lr<torch::optim::AdagradOptions>),
                          param_groups, std::move(defaults)) {}
Adagrad::Adagrad(std::vector<at::Tensor> params, torch::optim::AdagradOptions defaults, Options compile_options)
    : Adagrad({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults), std::move(compile_options)) {}

at::Tensor Adagrad::step(LossClosure closure) {
  return detail::compiled_step(
      *this, *updates_, closure, torch_steps_instead, [this] { torch::optim::Adagrad::step(); }, step_group,
      detail::write_step_counts<torch::optim::AdagradParamState>);
}
void Adagrad::save(torch::serialize::OutputArchive& archive) const {
  detail::write_step_counts<torch::optim::AdagradParamState>(*this, *updates_);
  torch::optim::Adagrad::save(archive);
}
void Adagrad::load(torch::serialize::InputArchive& archive) {
  torch::optim::Adagrad::load(archive);
  updates_->forget_step_counts();
}

}  // namespace jitc::optim
