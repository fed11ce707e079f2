// jitc::optim: LibTorch's optimizers with compiled steps. Each class is the torch::optim class of the same
// name (same options, state, param groups, serialization) whose step() runs its update through a
// jitc-compiled function: one graph per param group, its kernels fused (on CUDA, small ones launched as
// combo kernels), the parameters and the optimizer state updated in place.
//
//   jitc::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3));
//   loss.backward();
//   opt.step();   // compiled from the second step on; state and results as torch::optim::AdamW's
//
// torch::optim's C++ steps compute their bias corrections from a step count kept in C++ and pass the
// learning rate as a number: a compiled function sees new constants at every step. Here the step counts
// are tensors (one per parameter, float64, on its device, as torch.optim's capturable steps) and the
// learning rate a tensor per group, so every step runs the same graph: a learning-rate schedule causes no
// recompile. The update runs the ops torch::optim's step runs, in the same order and dtypes.
//
// A step where a parameter has no state yet (the first, or a parameter added since) is torch::optim's own
// step, which creates the state; a step with a sparse gradient, or with a param group whose parameters
// lie on several devices, too. State::step() (the int step count)
// is kept up to date by step(), and by save() where steps ran inside another compiled function (whose
// replays advance the step tensors only).
#pragma once
#include <jitc/options.h>
#include <jitc/stats.h>

#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <memory>
#include <utility>
#include <vector>

namespace jitc::optim {

namespace detail {
class CompiledUpdates;  // the compiled update of each param group, the step and learning-rate tensors
Stats stats_of(const CompiledUpdates& updates);
void bind_owner(CompiledUpdates& updates, torch::optim::Optimizer* owner);
void wait_for_compiles_of(const CompiledUpdates& updates);

// What each optimizer below adds to its torch::optim class.
template <class TorchOptimizer>
class WithCompiledUpdates : public TorchOptimizer {
 public:
  using LossClosure = torch::optim::Optimizer::LossClosure;
  Stats stats() const { return stats_of(*updates_); }  // summed over the param groups' compiled updates
  // The updates' programs building in the background are ready.
  void wait_for_compiles() const { wait_for_compiles_of(*updates_); }

  // Movable as torch::optim's optimizers are; the compiled updates follow (they read the groups' options
  // where a step was inlined into another compiled function).
  WithCompiledUpdates(WithCompiledUpdates&& other) noexcept : TorchOptimizer(std::move(other)), updates_(std::move(other.updates_)) {
    bind();
  }
  WithCompiledUpdates& operator=(WithCompiledUpdates&& other) noexcept {
    TorchOptimizer::operator=(std::move(other));
    updates_ = std::move(other.updates_);
    bind();
    return *this;
  }

 protected:
  template <class... TorchArguments>
  explicit WithCompiledUpdates(std::shared_ptr<CompiledUpdates> updates, TorchArguments&&... arguments)
      : TorchOptimizer(std::forward<TorchArguments>(arguments)...), updates_(std::move(updates)) {
    bind();
  }
  std::shared_ptr<CompiledUpdates> updates_;

 private:
  void bind() {
    if (updates_) bind_owner(*updates_, this);
  }
};
}  // namespace detail

// torch::optim::AdamW with a compiled step.
class AdamW : public detail::WithCompiledUpdates<torch::optim::AdamW> {
 public:
  AdamW(const std::vector<torch::optim::OptimizerParamGroup>& param_groups, torch::optim::AdamWOptions defaults = {},
        Options compile_options = {});
  AdamW(std::vector<at::Tensor> params, torch::optim::AdamWOptions defaults = {}, Options compile_options = {});
  at::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
};

// torch::optim::Adam with a compiled step.
class Adam : public detail::WithCompiledUpdates<torch::optim::Adam> {
 public:
  Adam(const std::vector<torch::optim::OptimizerParamGroup>& param_groups, torch::optim::AdamOptions defaults = {},
       Options compile_options = {});
  Adam(std::vector<at::Tensor> params, torch::optim::AdamOptions defaults = {}, Options compile_options = {});
  at::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
};

// torch::optim::SGD with a compiled step (momentum, dampening, Nesterov, weight decay).
class SGD : public detail::WithCompiledUpdates<torch::optim::SGD> {
 public:
  SGD(const std::vector<torch::optim::OptimizerParamGroup>& param_groups, torch::optim::SGDOptions defaults, Options compile_options = {});
  SGD(std::vector<at::Tensor> params, torch::optim::SGDOptions defaults, Options compile_options = {});
  at::Tensor step(LossClosure closure = nullptr) override;
};

// torch::optim::RMSprop with a compiled step (momentum, centered, weight decay). Its int step counts, which
// its update does not read, advance with the step() calls that run (not in another compiled function's
// replays).
class RMSprop : public detail::WithCompiledUpdates<torch::optim::RMSprop> {
 public:
  RMSprop(const std::vector<torch::optim::OptimizerParamGroup>& param_groups, torch::optim::RMSpropOptions defaults = {},
          Options compile_options = {});
  RMSprop(std::vector<at::Tensor> params, torch::optim::RMSpropOptions defaults = {}, Options compile_options = {});
  at::Tensor step(LossClosure closure = nullptr) override;
};

// torch::optim::Adagrad with a compiled step (learning-rate decay over its step counts, weight decay).
class Adagrad : public detail::WithCompiledUpdates<torch::optim::Adagrad> {
 public:
  Adagrad(const std::vector<torch::optim::OptimizerParamGroup>& param_groups, torch::optim::AdagradOptions defaults = {},
          Options compile_options = {});
  Adagrad(std::vector<at::Tensor> params, torch::optim::AdagradOptions defaults = {}, Options compile_options = {});
  at::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
};

}  // namespace jitc::optim
