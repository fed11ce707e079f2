// What jitc::optim's optimizers share (include/jitc/optim.h): a compiled update per param group, the
// step-count tensors per parameter and the learning-rate tensor per group that keep the update's graph
// the same from step to step.
#pragma once
#include <jitc/compiled_function.h>
#include <jitc/optim.h>

#include "tracer/trace.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace jitc::optim::detail {

// The numbers of a group's update that its graph holds as constants: guarded, so that a change (rare:
// betas, momentum, weight decay) compiles a new entry. The learning rate is a tensor instead.
struct Hyperparameters {
  double numbers[4] = {0, 0, 0, 0};
  bool flags[2] = {false, false};
  bool shared_step = false;  // one step count for the group's parameters (CompiledUpdates::step_counts)
};

// An optimizer's update of one param group, written with ATen ops: `tensors` holds its lists one after
// another (the parameters first, then their gradients, then state), each of one tensor per parameter.
using Update = void (*)(const std::vector<at::Tensor>& tensors, const at::Tensor& lr, const Hyperparameters& hyper);

// An update's `tensors` argument: the lists one after another.
std::vector<at::Tensor> concatenate(c10::ArrayRef<std::vector<at::Tensor>> lists);
// True when the group's parameters with gradients lie on more than one device: its learning-rate tensor
// would sit on one of them, so such a step is torch::optim's own.
bool spans_devices(torch::optim::OptimizerParamGroup& group);
// The state torch::optim keeps for parameter `p`, or null where it has none (torch's own step makes it,
// or rejects the parameter; a failed step of torch's may have left a null entry).
torch::optim::OptimizerParamState* state_of(const torch::optim::Optimizer& opt, const void* key);
inline torch::optim::OptimizerParamState* state_of(const torch::optim::Optimizer& opt, const at::Tensor& p) {
  return state_of(opt, p.unsafeGetTensorImpl());
}
// True when a param group lists a parameter twice: torch::optim steps it twice per step, advancing its
// one state twice, which is torch::optim's own step to do.
bool repeats_a_parameter(const torch::optim::Optimizer& opt);
// `t` in the type ATen computes its ops in (float for half and bfloat16). Where torch::optim scales an
// update by the learning rate through a Scalar (`p.add_(d_p, -lr)`, `p.addcdiv_(a, b, -step_size)`),
// ATen computes in that type and rounds once, into the parameter; the learning rate being a tensor
// here, the update's operands are taken into that type, so that the product is rounded once too.
at::Tensor in_op_math(const at::Tensor& t);
// The closure of a step, evaluated in grad mode as torch::optim's steps do (an undefined loss without one).
at::Tensor evaluate_closure(const std::function<at::Tensor()>& closure);

// Whether a param group's options are those it had when a step was traced, but for the learning rate.
using SameOptions = bool (*)(const torch::optim::OptimizerOptions& traced, const torch::optim::OptimizerOptions& now);
template <class GroupOptions>
bool same_but_lr(const torch::optim::OptimizerOptions& traced, const torch::optim::OptimizerOptions& now) {
  GroupOptions as_traced = static_cast<const GroupOptions&>(traced);
  as_traced.lr(now.get_lr());
  return as_traced == static_cast<const GroupOptions&>(now);
}

class CompiledUpdates : public std::enable_shared_from_this<CompiledUpdates> {
 public:
  CompiledUpdates(std::string optimizer_name, Options options, Update update, SameOptions same_options);

  // Runs group `group`'s update through its compiled function (inlined where the step runs inside
  // another compiled function's trace).
  void run(size_t group, const std::vector<at::Tensor>& tensors, const at::Tensor& lr, const Hyperparameters& hyper);

  // The group's learning rate as a float64 0-dim tensor on `device`, written in place when `lr` changed
  // (its identity stays: a CUDA graph recorded with it reads the new value).
  const at::Tensor& learning_rate(size_t group, double lr, const at::Device& device);

  // A step traced inside another compiled function (a whole training step): its replays run no C++ code,
  // so each run of that function's entries first writes the groups' learning rates into their tensors
  // and stops the entry where other options changed (tracer::add_run_check), as a step's own call does.
  void check_runs_of_inlined_step(torch::optim::Optimizer& opt);
  // The optimizer holding this object (kept current across moves by WithCompiledUpdates).
  void bind_owner(torch::optim::Optimizer* owner) { owner_ = owner; }

  // The step counts of a group's parameters (their states keyed `keys`, whose int counts are
  // `host_counts`) as float64 0-dim tensors on `device` that the update advances: one for them all where
  // the counts are equal (the common case: one increment and one set of bias corrections per group), else
  // one per parameter. A tensor is made again from the int count when that changed outside this class
  // (torch::optim's own step, load()).
  std::vector<at::Tensor> step_counts(size_t group, const std::vector<const void*>& keys, const std::vector<int64_t>& host_counts,
                                      const at::Device& device);
  // After an update advanced the tensors: the int counts the states now hold.
  void counted(const void* key, int64_t host_count);
  // The step-count tensors' values (a read from the device), for the int counts of serialization, with the
  // int count each tensor last agreed with: an int count that moved since (torch::optim's own step, load())
  // is the true one, and its tensor is made again at the next step.
  struct DeviceCount {
    const void* key;
    int64_t agreed, now;
  };
  std::vector<DeviceCount> device_counts() const;
  void forget_step_counts();

  Stats stats() const;
  void wait_for_compiles() const;
  // A group's update, when the optimizer's step is its own (not torch::optim's): a step runs it per group.
  using StepGroup = void (*)(torch::optim::Optimizer& opt, CompiledUpdates& updates, size_t group);

 private:
  using Signature = void(const std::vector<at::Tensor>&, const at::Tensor&, double, double, double, double, bool, bool, bool);
  struct StepCount {
    at::Tensor count;
    int64_t host = 0;  // the int count the tensor last agreed with
  };
  static void refresh(StepCount& step, int64_t host_count, const at::Device& device);
  void keep_counts_of_skipped(const StepCount& shared, const std::vector<const void*>& keys);
  struct LearningRate {
    at::Tensor value;
    double host = 0;
  };
  static void write_learning_rate(LearningRate& rate, double lr);  // in place, where it changed
  // What a run check compares with the owner's groups: each group's options and parameters at the trace.
  struct TracedGroup {
    std::shared_ptr<const torch::optim::OptimizerOptions> options;
    std::vector<const c10::TensorImpl*> params;
  };
  // The run check's body: "" after writing the learning rates, else why the traced step no longer stands.
  std::string bring_up_to_date(const std::vector<TracedGroup>& traced);
  std::string name_;
  Options options_;
  Update update_;
  SameOptions same_options_;
  std::vector<std::unique_ptr<CompiledFunction<Signature>>> groups_;
  torch::optim::Optimizer* owner_ = nullptr;
  // The learning rates are written by steps and by run checks, which calls of a compiled function on
  // several threads may run at once.
  std::mutex rates_mutex_;
  std::vector<LearningRate> rates_;
  std::unordered_map<const void*, StepCount> steps_;  // per parameter
  std::map<size_t, StepCount> group_steps_;           // per group (node-based: pointers to it stay valid)
  std::unordered_map<const void*, StepCount*> last_;  // the count each parameter's last update advanced
};

// torch::optim's step around the compiled updates: under NoGradGuard, the closure in grad mode (its loss
// returned), then torch::optim's own step (`torch_step`) where `torch_steps_instead` holds, else each group
// through `step_group`.
// `sync_step_counts` (optimizers with step counts) writes the tensors' counts into the int counts
// before torch's step, and before a step traced inside another compiled function (whose replays advanced
// the tensors only), so that its choice of shared or per-parameter counts starts from the true counts.
using SyncStepCounts = void (*)(const torch::optim::Optimizer& opt, CompiledUpdates& updates);
template <class TorchStep>
at::Tensor compiled_step(torch::optim::Optimizer& opt, CompiledUpdates& updates, const std::function<at::Tensor()>& closure,
                         bool (*torch_steps_instead)(torch::optim::Optimizer&), TorchStep torch_step, CompiledUpdates::StepGroup step_group,
                         SyncStepCounts sync_step_counts = nullptr) {
  at::NoGradGuard no_grad;
  const at::Tensor loss = evaluate_closure(closure);
  const bool torch_steps = torch_steps_instead(opt) || repeats_a_parameter(opt);
  if (sync_step_counts && (torch_steps || tracer::is_tracing())) sync_step_counts(opt, updates);
  if (torch_steps) {
    torch_step();
    return loss;
  }
  for (size_t g = 0; g < opt.param_groups().size(); ++g) step_group(opt, updates, g);
  if (tracer::is_tracing()) updates.check_runs_of_inlined_step(opt);
  return loss;
}

// The int step counts of the states (ParamState: torch::optim's AdamParamState...), from the step-count
// tensors: steps inside another compiled function's replays advanced those only.
template <class ParamState>
void write_step_counts(const torch::optim::Optimizer& opt, CompiledUpdates& updates) {
  for (const auto& count : updates.device_counts()) {
    auto* state = static_cast<ParamState*>(state_of(opt, count.key));
    if (!state || state->step() != count.agreed) continue;
    state->step(count.now);
    updates.counted(count.key, count.now);
  }
}

}  // namespace jitc::optim::detail
