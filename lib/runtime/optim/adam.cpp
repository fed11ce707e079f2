// jitc::optim::Adam and AdamW: torch::optim's steps (torch/csrc/api/src/optim/adam.cpp, adamw.cpp) with
// their step counts and learning rates as tensors, so that each step runs the same compiled graph.
#include "runtime/optim/compiled_updates.h"

#include <ATen/ATen.h>

namespace jitc::optim {

namespace {

using detail::CompiledUpdates;
using detail::Hyperparameters;

// The lists: parameters, gradients, exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad only), step counts.
// numbers: beta1, beta2, eps, weight decay; flags: amsgrad, decoupled weight decay (AdamW).
void adam_update(const std::vector<at::Tensor>& t, const at::Tensor& lr, const Hyperparameters& hyper) {
  const auto [beta1, beta2, eps, weight_decay] = hyper.numbers;
  const bool amsgrad = hyper.flags[0], decoupled = hyper.flags[1];
  const size_t lists = amsgrad ? 6 : 5, n = t.size() / lists;
  const auto list = [&](size_t k, size_t i) -> const at::Tensor& { return t[k * n + i]; };
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor &p = list(0, i), &exp_avg = list(2, i), &exp_avg_sq = list(3, i), &step = list(lists - 1, i);
    at::Tensor grad = list(1, i);
    if (weight_decay != 0) {
      if (decoupled) p.mul_(at::rsub(lr * weight_decay, 1));
      else grad = grad.add(p, weight_decay);
    }
    step.add_(1);
    // In float64 as torch::optim computes them on the host; each meets the float tensors as its scalar does.
    const at::Tensor bias_correction1 = at::rsub(at::pow(beta1, step), 1);
    const at::Tensor bias_correction2 = at::rsub(at::pow(beta2, step), 1);
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
    p.add_((lr / bias_correction1).neg() * exp_avg / denom);
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
        auto it = opt.state().find(p.unsafeGetTensorImpl());
        if (p.grad().is_sparse() || it == opt.state().end()) return true;
        if (amsgrad && !static_cast<ParamState&>(*it->second).max_exp_avg_sq().defined()) return true;
      }
    }
    return false;
  }

  static void step_group(torch::optim::Optimizer& opt, CompiledUpdates& updates, size_t g) {
    auto& group = opt.param_groups()[g];
    auto& options = static_cast<GroupOptions&>(group.options());
    std::vector<at::Tensor> lists[6];
    std::vector<ParamState*> states;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = static_cast<ParamState&>(*opt.state().at(p.unsafeGetTensorImpl()));
      lists[0].push_back(p);
      lists[1].push_back(p.grad());
      lists[2].push_back(state.exp_avg());
      lists[3].push_back(state.exp_avg_sq());
      if (options.amsgrad()) lists[4].push_back(state.max_exp_avg_sq());
      lists[5].push_back(updates.step_count(p.unsafeGetTensorImpl(), state.step(), p.device()));
      states.push_back(&state);
    }
    if (states.empty()) return;
    const auto [beta1, beta2] = options.betas();
    const Hyperparameters hyper{{beta1, beta2, options.eps(), options.weight_decay()}, {options.amsgrad(), decoupled}};
    updates.run(g, detail::concatenate(lists), updates.learning_rate(g, options.lr(), lists[0][0].device()), hyper);
    for (size_t i = 0; i < states.size(); ++i) {
      states[i]->step(states[i]->step() + 1);
      updates.counted(lists[0][i].unsafeGetTensorImpl(), states[i]->step());
    }
  }
};

using AdamWSteps = AdamFamily<torch::optim::AdamWOptions, torch::optim::AdamWParamState, /*decoupled=*/true>;
using AdamSteps = AdamFamily<torch::optim::AdamOptions, torch::optim::AdamParamState, /*decoupled=*/false>;

}  // namespace

AdamW::AdamW(const std::vector<torch::optim::OptimizerParamGroup>& param_groups, torch::optim::AdamWOptions defaults,
             Options compile_options)
    : WithCompiledUpdates(std::make_shared<CompiledUpdates>("jitc::optim::AdamW", std::move(compile_options), adam_update), param_groups,
                          std::move(defaults)) {}
AdamW::AdamW(std::vector<at::Tensor> params, torch::optim::AdamWOptions defaults, Options compile_options)
    : AdamW({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults), std::move(compile_options)) {}

at::Tensor AdamW::step(LossClosure closure) {
  return detail::compiled_step(
      *this, *updates_, closure, AdamWSteps::torch_steps_instead,
      [this] {
        detail::write_step_counts<torch::optim::AdamWParamState>(*this, *updates_);
        torch::optim::AdamW::step();
      },
      AdamWSteps::step_group);
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
    : WithCompiledUpdates(std::make_shared<CompiledUpdates>("jitc::optim::Adam", std::move(compile_options), adam_update), param_groups,
                          std::move(defaults)) {}
Adam::Adam(std::vector<at::Tensor> params, torch::optim::AdamOptions defaults, Options compile_options)
    : Adam({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults), std::move(compile_options)) {}

at::Tensor Adam::step(LossClosure closure) {
  return detail::compiled_step(
      *this, *updates_, closure, AdamSteps::torch_steps_instead,
      [this] {
        detail::write_step_counts<torch::optim::AdamParamState>(*this, *updates_);
        torch::optim::Adam::step();
      },
      AdamSteps::step_group);
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
