#include "runtime/optim/compiled_updates.h"

#include "tracer/tracer_tensor.h"

#include <jitc/jitc.h>

#include <ATen/ops/full.h>
#include <fmt/format.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace jitc::optim::detail {

namespace {

constexpr int kFirstNumberArgument = 2;  // the Signature's four doubles follow the tensors and the lr

// The compiled function's options: the user's, named after the optimizer, the hyperparameters constants.
Options update_options(Options options, const std::string& name, size_t group) {
  if (options.name.empty()) options.name = name + " group " + std::to_string(group);
  if (options.arg_names.empty())
    options.arg_names = {"tensors", "lr", "number0", "number1", "number2", "number3", "flag0", "flag1", "shared_step"};
  for (int i = 0; i < 4; ++i) options.mark_static(kFirstNumberArgument + i);
  return options;
}

// The step counts and learning rates are the optimizer's state, made, written and read outside any trace
// (a step inside another compiled function's trace): that graph reads them as captured tensors, where a
// stand-in the optimizer kept would end the trace's replays.
using Untraced = c10::impl::ExcludeDispatchKeyGuard;

at::Tensor float64_scalar(double value, const at::Device& device) {
  return at::full({}, value, at::TensorOptions().dtype(at::kDouble).device(device));
}

}  // namespace

std::vector<at::Tensor> concatenate(c10::ArrayRef<std::vector<at::Tensor>> lists) {
  std::vector<at::Tensor> all;
  for (const auto& list : lists) all.insert(all.end(), list.begin(), list.end());
  return all;
}

bool spans_devices(torch::optim::OptimizerParamGroup& group) {
  std::optional<at::Device> first;
  for (const auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    if (first && *first != p.device()) return true;
    first = p.device();
  }
  return false;
}

torch::optim::OptimizerParamState* state_of(const torch::optim::Optimizer& opt, const void* key) {
  auto it = opt.state().find(const_cast<void*>(key));
  return it == opt.state().end() ? nullptr : it->second.get();
}

bool repeats_a_parameter(const torch::optim::Optimizer& opt) {
  for (const auto& group : opt.param_groups()) {
    std::unordered_set<const c10::TensorImpl*> seen;
    for (const auto& p : group.params())
      if (!seen.insert(p.unsafeGetTensorImpl()).second) return true;
  }
  return false;
}

at::Tensor in_op_math(const at::Tensor& t) {
  return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16 ? t.to(at::kFloat) : t;
}

at::Tensor evaluate_closure(const std::function<at::Tensor()>& closure) {
  if (!closure) return {};
  at::AutoGradMode enable_grad(true);
  return closure();
}

CompiledUpdates::CompiledUpdates(std::string optimizer_name, Options options, Update update, SameOptions same_options)
    : name_(std::move(optimizer_name)), options_(std::move(options)), update_(update), same_options_(same_options) {}

void CompiledUpdates::run(size_t group, const std::vector<at::Tensor>& tensors, const at::Tensor& lr, const Hyperparameters& hyper) {
  while (groups_.size() <= group) {
    auto body = [update = update_](const std::vector<at::Tensor>& t, const at::Tensor& rate, double n0, double n1, double n2, double n3,
                                   bool f0, bool f1, bool shared_step) {
      update(t, rate, Hyperparameters{{n0, n1, n2, n3}, {f0, f1}, shared_step});
    };
    groups_.push_back(
        std::make_unique<CompiledFunction<Signature>>(jitc::compile<Signature>(body, update_options(options_, name_, groups_.size()))));
  }
  const auto& n = hyper.numbers;
  (*groups_[group])(tensors, lr, n[0], n[1], n[2], n[3], hyper.flags[0], hyper.flags[1], hyper.shared_step);
}

const at::Tensor& CompiledUpdates::learning_rate(size_t group, double lr, const at::Device& device) {
  std::lock_guard<std::mutex> lock(rates_mutex_);
  if (rates_.size() <= group) rates_.resize(group + 1);
  LearningRate& rate = rates_[group];
  if (!rate.value.defined() || rate.value.device() != device) {
    Untraced untraced(tracer::kTracerKey);
    rate.value = float64_scalar(lr, device);
    rate.host = lr;
  }
  write_learning_rate(rate, lr);
  return rate.value;
}

void CompiledUpdates::write_learning_rate(LearningRate& rate, double lr) {
  if (rate.host == lr) return;
  Untraced untraced(tracer::kTracerKey);
  rate.value.fill_(lr);
  rate.host = lr;
}

void CompiledUpdates::check_runs_of_inlined_step(torch::optim::Optimizer& opt) {
  std::vector<TracedGroup> groups;
  for (const auto& group : opt.param_groups()) {
    TracedGroup traced{group.options().clone(), {}};
    for (const auto& p : group.params()) traced.params.push_back(p.unsafeGetTensorImpl());
    groups.push_back(std::move(traced));
  }
  tracer::add_run_check([self = weak_from_this(), groups = std::move(groups)]() -> std::string {
    const auto updates = self.lock();
    return updates ? updates->bring_up_to_date(groups) : "";  // the optimizer is gone: nothing of it to read
  });
}

std::string CompiledUpdates::bring_up_to_date(const std::vector<TracedGroup>& traced) {
  if (!owner_) return "";
  const auto& groups = owner_->param_groups();
  if (groups.size() != traced.size())
    return fmt::format("{} has {} param groups, {} when its step was traced", name_, groups.size(), traced.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& params = groups[g].params();
    const bool same_params = params.size() == traced[g].params.size() &&
                             std::equal(params.begin(), params.end(), traced[g].params.begin(),
                                        [](const at::Tensor& p, const c10::TensorImpl* q) { return p.unsafeGetTensorImpl() == q; });
    if (!same_params) return fmt::format("the parameters of {}'s param group {} changed since its step was traced", name_, g);
    if (!same_options_(*traced[g].options, groups[g].options()))
      return fmt::format("the options of {}'s param group {} changed (other than lr) since its step was traced", name_, g);
    std::lock_guard<std::mutex> lock(rates_mutex_);
    if (g < rates_.size() && rates_[g].value.defined()) write_learning_rate(rates_[g], groups[g].options().get_lr());
  }
  return "";
}

void CompiledUpdates::refresh(StepCount& step, int64_t host_count, const at::Device& device) {
  if (step.count.defined() && step.host == host_count && step.count.device() == device) return;
  Untraced untraced(tracer::kTracerKey);
  step.count = float64_scalar(static_cast<double>(host_count), device);
  step.host = host_count;
}

std::vector<at::Tensor> CompiledUpdates::step_counts(size_t group, const std::vector<const void*>& keys,
                                                     const std::vector<int64_t>& host_counts, const at::Device& device) {
  if (std::all_of(host_counts.begin(), host_counts.end(), [&](int64_t c) { return c == host_counts[0]; })) {
    StepCount& shared = group_steps_[group];
    keep_counts_of_skipped(shared, keys);
    refresh(shared, host_counts[0], device);
    for (const void* key : keys) last_[key] = &shared;
    return {shared.count};
  }
  std::vector<at::Tensor> counts;
  for (size_t i = 0; i < keys.size(); ++i) {
    StepCount& own = steps_[keys[i]];
    refresh(own, host_counts[i], device);
    last_[keys[i]] = &own;
    counts.push_back(own.count);
  }
  return counts;
}

// A parameter that last stepped with `shared` and has no gradient now keeps the count it reached, in a
// tensor of its own: the others advance `shared`, and device_counts() reads each parameter's count.
void CompiledUpdates::keep_counts_of_skipped(const StepCount& shared, const std::vector<const void*>& keys) {
  const std::unordered_set<const void*> stepping(keys.begin(), keys.end());
  for (auto& [key, last] : last_) {
    if (last != &shared || stepping.count(key)) continue;
    StepCount& own = steps_[key];
    Untraced untraced(tracer::kTracerKey);
    own.count = shared.count.clone();  // where replays advanced it, the int counts lag (write_step_counts)
    own.host = shared.host;
    last = &own;
  }
}

void CompiledUpdates::counted(const void* key, int64_t host_count) { last_.at(key)->host = host_count; }

std::vector<CompiledUpdates::DeviceCount> CompiledUpdates::device_counts() const {
  std::vector<DeviceCount> counts;
  Untraced untraced(tracer::kTracerKey);
  std::unordered_map<const StepCount*, int64_t> read;  // a group's parameters share one tensor: one read (a sync on CUDA)
  for (const auto& [key, step] : last_) {
    auto [it, first] = read.emplace(step, 0);
    if (first) it->second = static_cast<int64_t>(step->count.item<double>());
    counts.push_back({key, step->host, it->second});
  }
  return counts;
}

void CompiledUpdates::forget_step_counts() {
  last_.clear();
  steps_.clear();
  group_steps_.clear();
}

Stats CompiledUpdates::stats() const {
  Stats total;
  for (const auto& group : groups_) {
    const Stats s = group->stats();
    total.calls += s.calls;
    total.hits += s.hits;
    total.compiles += s.compiles;
    total.recompiles += s.recompiles;
    total.size_checks += s.size_checks;
    total.graph_breaks += s.graph_breaks;
    total.first_hit_checks += s.first_hit_checks;
    total.eager_fallbacks += s.eager_fallbacks;
    total.entries += s.entries;
    total.compile_seconds += s.compile_seconds;
    total.programs_compiled += s.programs_compiled;
    total.kernels_compiled += s.kernels_compiled;
    total.programs_from_cache += s.programs_from_cache;
    total.codegen_seconds += s.codegen_seconds;
    total.codegen_stages.passes += s.codegen_stages.passes;
    total.codegen_stages.lower_schedule += s.codegen_stages.lower_schedule;
    total.codegen_stages.codegen += s.codegen_stages.codegen;
    total.codegen_stages.llvm += s.codegen_stages.llvm;
    total.codegen_stages.nvrtc += s.codegen_stages.nvrtc;
    total.codegen_stages.load += s.codegen_stages.load;
    total.codegen_stages.autotune += s.codegen_stages.autotune;
    total.cudagraph_captures += s.cudagraph_captures;
    total.cudagraph_replays += s.cudagraph_replays;
    total.recompile_reasons.insert(total.recompile_reasons.end(), s.recompile_reasons.begin(), s.recompile_reasons.end());
  }
  return total;
}

void CompiledUpdates::wait_for_compiles() const {
  for (const auto& group : groups_) group->wait_for_compiles();
}

Stats stats_of(const CompiledUpdates& updates) { return updates.stats(); }
void bind_owner(CompiledUpdates& updates, torch::optim::Optimizer* owner) { updates.bind_owner(owner); }
void wait_for_compiles_of(const CompiledUpdates& updates) { updates.wait_for_compiles(); }

}  // namespace jitc::optim::detail
