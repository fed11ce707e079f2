// jitc::optim::Adam and AdamW: torch::optim's steps (torch/csrc/api/src/optim/adam.cpp, adamw.cpp) with
// their step counts and learning rates as tensors, so that each step runs the same compiled graph.
#include "runtime/optim/compiled_updates.h"

#include <ATen/ATen.h>

#include <optional>
#include <utility>

namespace jitc::optim {

namespace {

using detail::CompiledUpdates;
using detail::Hyperparameters;

// p.mul_(factor) as torch::optim's mul_ by a Scalar computes it: ATen's CPU kernel takes the Scalar in the
// parameter's type, its CUDA kernel in float (op math), where a device tensor would be taken in the
// parameter's type.
void decay(const at::Tensor& p, const at::Tensor& factor) {
  if (p.is_cpu()) p.mul_(factor.to(p.scalar_type()));
  else p.copy_(detail::in_op_math(p) * factor);
}

// The lists: parameters, gradients, exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad only), then the step
// counts: one per parameter, or one for them all (hyper.shared_step). numbers: beta1, beta2, eps, weight
// decay; flags: amsgrad, decoupled weight decay (AdamW).
void adam_update(const std::vector<at::Tensor>& t, const at::Tensor& lr, const Hyperparameters& hyper) {
  const auto [beta1, beta2, eps, weight_decay] = hyper.numbers;
  const bool amsgrad = hyper.flags[0], decoupled = hyper.flags[1];
  const size_t lists = amsgrad ? 5 : 4;  // before the step counts
  const size_t n = hyper.shared_step ? (t.size() - 1) / lists : t.size() / (lists + 1);
  const auto list = [&](size_t k, size_t i) -> const at::Tensor& { return t[k * n + i]; };
  // The step's bias corrections, 1 - beta^step after the increment, in float64 as torch::optim computes
  // them on the host; each meets the float tensors as its scalar does.
  const auto corrections = [&](const at::Tensor& step) {
    step.add_(1);
    return std::pair{at::rsub(at::pow(beta1, step), 1), at::rsub(at::pow(beta2, step), 1)};
  };
  std::optional<std::pair<at::Tensor, at::Tensor>> shared;
  if (hyper.shared_step) shared = corrections(t.back());
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor &p = list(0, i), &exp_avg = list(2, i), &exp_avg_sq = list(3, i);
    at::Tensor grad = list(1, i);
    if (weight_decay != 0) {
      if (decoupled) decay(p, at::rsub(lr * weight_decay, 1));
      else grad = grad.add(p, weight_decay);
    }
    const auto [bias_correction1, bias_correction2] = shared ? *shared : corrections(list(lists, i));
    exp_avg.mul_(beta1).add_(grad, 1 - beta1);
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
    at::Tensor second = exp_avg_sq;
    if (amsgrad) {
      const at::Tensor& max_exp_avg_sq = list(4, i);
      max_exp_avg_sq.copy_(at::maximum(exp_avg_sq, max_exp_avg_sq));
      second = max_exp_avg_sq;
    }
    const at::Tensor denom = (second.sqrt() / bias_correction2.sqrt()).add_(eps);
    // addcdiv_(exp_avg, denom, -step_size): ATen's kernel computes p + value * exp_avg / denom.
    p.add_((lr / bias_correction1).neg() * detail::in_op_math(exp_avg) / detail::in_op_math(denom));
  }
}

// torch::optim's Adam or AdamW (their options and states have the same fields). Its own step instead
// where a parameter has no state yet, a sparse gradient, or a group spans devices.
template <class GroupOptions, class ParamState, bool decoupled>
struct AdamFamily {
  static bool torch_steps_instead(torch::optim::Optimizer& opt) {
    for (auto& group : opt.param_groups()) {
      if (detail::spans_devices(group)) return true;
      const bool amsgrad = static_cast<GroupOptions&>(group.options()).amsgrad();
      for (auto& p : group.params()) {
        if (!p.grad().defined()) continue;
        auto* state = detail::state_of(opt, p);
        if (p.grad().is_sparse() || !state) return true;
        if (amsgrad && !static_cast<ParamState&>(*state).max_exp_avg_sq().defined()) return true;
      }
    }
    return false;
  }

  static void step_group(torch::optim::Optimizer& opt, CompiledUpdates& updates, size_t g) {
    auto& group = opt.param_groups()[g];
    auto& options = static_cast<GroupOptions&>(group.options());
    std::vector<at::Tensor> lists[6];
    std::vector<ParamState*> states;
    std::vector<const void*> keys;
    std::vector<int64_t> counts;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = static_cast<ParamState&>(*opt.state().at(p.unsafeGetTensorImpl()));
      lists[0].push_back(p);
      lists[1].push_back(p.grad());
      lists[2].push_back(state.exp_avg());
      lists[3].push_back(state.exp_avg_sq());
      if (options.amsgrad()) lists[4].push_back(state.max_exp_avg_sq());
      states.push_back(&state);
      keys.push_back(p.unsafeGetTensorImpl());
      counts.push_back(state.step());
    }
    if (states.empty()) return;
    const at::Device device = lists[0][0].device();
    lists[5] = updates.step_counts(g, keys, counts, device);
    const auto [beta1, beta2] = options.betas();
    const Hyperparameters hyper{
        {beta1, beta2, options.eps(), options.weight_decay()}, {options.amsgrad(), decoupled}, lists[5].size() < states.size()};
    updates.run(g, detail::concatenate(lists), updates.learning_rate(g, options.lr(), device), hyper);
    for (size_t i = 0; i < states.size(); ++i) {
      states[i]->step(counts[i] + 1);
      updates.counted(keys[i], counts[i] + 1);
    }
  }
};

using AdamWSteps = AdamFamily<torch::optim::AdamWOptions, torch::optim::AdamWParamState, /*decoupled=*/true>;
using AdamSteps = AdamFamily<torch::optim::AdamOptions, torch::optim::AdamParamState, /*decoupled=*/false>;

}  // namespace

AdamW::AdamW(const std::vector<torch::optim::OptimizerParamGroup>& param_groups, torch::optim::AdamWOptions defaults,
             Options compile_options)
    : WithCompiledUpdates(std::make_shared<CompiledUpdates>("jitc::optim::AdamW", std::move(compile_options), adam_update,
                                                            detail::same_but_lr<torch::optim::AdamWOptions>),
                          param_groups, std::move(defaults)) {}
AdamW::AdamW(std::vector<at::Tensor> params, torch::optim::AdamWOptions defaults, Options compile_options)
    : AdamW({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults), std::move(compile_options)) {}

at::Tensor AdamW::step(LossClosure closure) {
  return detail::compiled_step(
      *this, *updates_, closure, AdamWSteps::torch_steps_instead, [this] { torch::optim::AdamW::step(); }, AdamWSteps::step_group,
      detail::write_step_counts<torch::optim::AdamWParamState>);
}
void AdamW::save(torch::serialize::OutputArchive& archive) const {
  detail::write_step_counts<torch::optim::AdamWParamState>(*this, *updates_);
  torch::optim::AdamW::save(archive);
}
void AdamW::load(torch::serialize::InputArchive& archive) {
  torch::optim::AdamW::load(archive);
  updates_->forget_step_counts();
}

Adam::Adam(const std::vector<torch::optim::OptimizerParamGroup>& param_groups, torch::optim::AdamOptions defaults, Options compile_options)
    : WithCompiledUpdates(std::make_shared<CompiledUpdates>("jitc::optim::Adam", std::move(compile_options), adam_update,
                                                            detail::same_but_lr<torch::optim::AdamOptions>),
                          param_groups, std::move(defaults)) {}
Adam::Adam(std::vector<at::Tensor> params, torch::optim::AdamOptions defaults, Options compile_options)
    : Adam({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults), std::move(compile_options)) {}

at::Tensor Adam::step(LossClosure closure) {
  return detail::compiled_step(
      *this, *updates_, closure, AdamSteps::torch_steps_instead, [this] { torch::optim::Adam::step(); }, AdamSteps::step_group,
      detail::write_step_counts<torch::optim::AdamParamState>);
}
void Adam::save(torch::serialize::OutputArchive& archive) const {
  detail::write_step_counts<torch::optim::AdamParamState>(*this, *updates_);
  torch::optim::Adam::save(archive);
}
void Adam::load(torch::serialize::InputArchive& archive) {
  torch::optim::Adam::load(archive);
  updates_->forget_step_counts();
}

}  // namespace jitc::optim
