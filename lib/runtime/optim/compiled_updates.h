// What jitc::optim's optimizers share (include/jitc/optim.h): a compiled update per param group, the
// step-count tensors per parameter and the learning-rate tensor per group that keep the update's graph
// the same from step to step.
#pragma once
#include <jitc/compiled_function.h>
#include <jitc/optim.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace jitc::optim::detail {

// The numbers of a group's update that its graph holds as constants: guarded, so that a change (rare:
// betas, momentum, weight decay) compiles a new entry. The learning rate is a tensor instead.
struct Hyperparameters {
  double numbers[4] = {0, 0, 0, 0};
  bool flags[2] = {false, false};
};

// An optimizer's update of one param group, written with ATen ops: `tensors` holds its lists one after
// another (the parameters first, then their gradients, then state), each of one tensor per parameter.
using Update = void (*)(const std::vector<at::Tensor>& tensors, const at::Tensor& lr, const Hyperparameters& hyper);

// An update's `tensors` argument: the lists one after another.
std::vector<at::Tensor> concatenate(c10::ArrayRef<std::vector<at::Tensor>> lists);
// True when the group's parameters with gradients lie on more than one device: its learning-rate tensor
// would sit on one of them, so such a step is torch::optim's own.
bool spans_devices(torch::optim::OptimizerParamGroup& group);
// The closure of a step, evaluated in grad mode as torch::optim's steps do (an undefined loss without one).
at::Tensor evaluate_closure(const std::function<at::Tensor()>& closure);

class CompiledUpdates {
 public:
  CompiledUpdates(std::string optimizer_name, Options options, Update update);

  // Runs group `group`'s update through its compiled function (inlined where the step runs inside
  // another compiled function's trace).
  void run(size_t group, const std::vector<at::Tensor>& tensors, const at::Tensor& lr, const Hyperparameters& hyper);

  // The group's learning rate as a float64 0-dim tensor on `device`, written in place when `lr` changed
  // (its identity stays: a CUDA graph recorded with it reads the new value).
  const at::Tensor& learning_rate(size_t group, double lr, const at::Device& device);

  // The step count of the parameter whose state is keyed `key`, as a float64 0-dim tensor on `device`
  // that the update advances. `host_count` is the state's int count: the tensor is made again from it
  // when it changed outside this class (torch::optim's own step, load()).
  const at::Tensor& step_count(const void* key, int64_t host_count, const at::Device& device);
  // After an update advanced the tensors: the int counts the state now holds.
  void counted(const void* key, int64_t host_count);
  // The step-count tensors' values (a read from the device), for the int counts of serialization.
  std::vector<std::pair<const void*, int64_t>> device_counts() const;
  void forget_step_counts() { steps_.clear(); }

  Stats stats() const;
  void wait_for_compiles() const;
  // A group's update, when the optimizer's step is its own (not torch::optim's): a step runs it per group.
  using StepGroup = void (*)(torch::optim::Optimizer& opt, CompiledUpdates& updates, size_t group);

 private:
  using Signature = void(const std::vector<at::Tensor>&, const at::Tensor&, double, double, double, double, bool, bool);
  struct StepCount {
    at::Tensor count;
    int64_t host = 0;  // the int count the tensor last agreed with
  };
  struct LearningRate {
    at::Tensor value;
    double host = 0;
  };
  std::string name_;
  Options options_;
  Update update_;
  std::vector<std::unique_ptr<CompiledFunction<Signature>>> groups_;
  std::vector<LearningRate> rates_;
  std::unordered_map<const void*, StepCount> steps_;
};

// torch::optim's step around the compiled updates: under NoGradGuard, the closure in grad mode (its loss
// returned), then torch::optim's own step (`torch_step`) where `torch_steps_instead` holds, else each group
// through `step_group`.
template <class TorchStep>
at::Tensor compiled_step(torch::optim::Optimizer& opt, CompiledUpdates& updates, const std::function<at::Tensor()>& closure,
                         bool (*torch_steps_instead)(torch::optim::Optimizer&), TorchStep torch_step,
                         CompiledUpdates::StepGroup step_group) {
  at::NoGradGuard no_grad;
  const at::Tensor loss = evaluate_closure(closure);
  if (torch_steps_instead(opt)) {
    torch_step();
    return loss;
  }
  for (size_t g = 0; g < opt.param_groups().size(); ++g) step_group(opt, updates, g);
  return loss;
}

// The int step counts of the states (ParamState: torch::optim's AdamParamState...), from the step-count
// tensors: steps inside another compiled function's replays advanced those only.
template <class ParamState>
void write_step_counts(const torch::optim::Optimizer& opt, CompiledUpdates& updates) {
  for (const auto& [key, count] : updates.device_counts()) {
    auto it = opt.state().find(const_cast<void*>(key));
    if (it == opt.state().end()) continue;
    static_cast<ParamState&>(*it->second).step(count);
    updates.counted(key, count);
  }
}

}  // namespace jitc::optim::detail
