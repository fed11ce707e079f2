#include "inductor/in_place_updates.h"

#include "inductor/graph_uses.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

namespace jitc::inductor {

namespace {

using graph::ValueId;

// A write-back of the epilogue: copy_(input, value) with the input's whole layout.
struct WriteBack {
  size_t step;  // its position among the plan's steps
  ValueId input, value;
};

std::vector<WriteBack> write_backs(const Plan& plan, const graph::Graph& g) {
  std::unordered_set<ValueId> inputs;
  for (const auto& in : g.inputs)
    if (in.kind != graph::InputKind::kConstant) inputs.insert(in.value);
  std::vector<WriteBack> found;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    if (plan.steps[s].kind != Step::Kind::kExtern) continue;
    const graph::Node& n = g.nodes[plan.steps[s].index];
    if (n.name() != "aten::copy_") continue;
    const auto args = node_tensor_args(n);
    if (args.size() == 2 && inputs.count(args[0])) found.push_back({s, args[0], args[1]});
  }
  return found;
}

bool same_layout(const graph::TensorMeta& a, const graph::TensorMeta& b) {
  return a.dtype == b.dtype && a.device == b.device && a.sizes == b.sizes && a.strides == b.strides;
}

// Whether anything the graph returns shares the input's memory or is the new value (a returned value
// must stay what eager returns; a training forward returns the values its backward reads).
bool returned(const graph::Graph& g, const WriteBack& w) {
  const int32_t storage = g.values[w.input].storage;
  return std::any_of(g.outputs.begin(), g.outputs.end(),
                     [&](ValueId o) { return o != graph::kNoValue && (o == w.value || (storage >= 0 && g.values[o].storage == storage)); });
}

// Whether step s reads or writes memory of `storage`.
bool touches(const Plan& plan, const graph::Graph& g, const Step& step, int32_t storage) {
  auto shares = [&](ValueId v) { return v != graph::kNoValue && g.values[v].storage == storage; };
  if (step.kind == Step::Kind::kKernel) {
    const auto& buffers = plan.kernels[step.index].buffers;
    return std::any_of(buffers.begin(), buffers.end(), shares);
  }
  if (step.kind == Step::Kind::kExtern) {
    const auto args = node_tensor_args(g.nodes[step.index]);
    return std::any_of(args.begin(), args.end(), shares);
  }
  return false;
}

// The index expression of the kernel's one store into buffer b.
std::optional<int> store_index(const Kernel& k, int b) {
  std::optional<int> index;
  for (const Expr& e : k.body) {
    if (e.op != ScalarOp::kStore || e.buffer != b) continue;
    if (index) return std::nullopt;
    index = e.a;
  }
  return index;
}

// The loads of kernel `launch` that read the input's memory, when each reads the input itself at the
// element the new value's store writes; nullopt otherwise.
std::optional<std::vector<int>> same_element_loads(const KernelLaunch& launch, const graph::Graph& g, const WriteBack& w, int out) {
  const Kernel& k = launch.kernel;
  const auto index = store_index(k, out);
  if (k.num_reduction_loops > 0 || !index) return std::nullopt;
  const int32_t storage = g.values[w.input].storage;
  std::vector<int> loads;
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Expr& e = k.body[i];
    if (e.op != ScalarOp::kLoad) continue;
    const ValueId read = launch.buffers[e.buffer];
    if (read != w.input && g.values[read].storage != storage) continue;
    if (read != w.input || e.a != *index) return std::nullopt;
    loads.push_back(static_cast<int>(i));
  }
  return loads;
}

// Places one write-back's value in its input's memory if nothing forbids it.
bool place_in_input(Plan& plan, const graph::Graph& g, const WriteBack& w, const std::vector<size_t>& kernel_step) {
  if (!same_layout(g.values[w.input].meta, g.values[w.value].meta) || returned(g, w)) return false;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    KernelLaunch& launch = plan.kernels[k];
    const auto output = std::find(launch.outputs.begin(), launch.outputs.end(), w.value);
    if (output == launch.outputs.end()) continue;
    const int out = static_cast<int>(std::find(launch.buffers.begin(), launch.buffers.end(), w.value) - launch.buffers.begin());
    const auto loads = same_element_loads(launch, g, w, out);
    if (!loads) return false;
    for (size_t s = kernel_step[k] + 1; s < w.step; ++s)
      if (touches(plan, g, plan.steps[s], g.values[w.input].storage)) return false;
    for (int i : *loads) launch.kernel.body[i].buffer = out;
    launch.output_memory.resize(launch.outputs.size(), graph::kNoValue);
    launch.output_memory[output - launch.outputs.begin()] = w.input;
    return true;
  }
  return false;
}

}  // namespace

int store_input_updates_in_place(Plan& plan, const graph::Graph& g) {
  if (std::any_of(plan.kernels.begin(), plan.kernels.end(), [](const KernelLaunch& k) { return has_checks(k.kernel); })) return 0;
  std::vector<size_t> kernel_step(plan.kernels.size());
  for (size_t s = 0; s < plan.steps.size(); ++s)
    if (plan.steps[s].kind == Step::Kind::kKernel) kernel_step[plan.steps[s].index] = s;
  int placed = 0;
  for (const WriteBack& w : write_backs(plan, g)) placed += place_in_input(plan, g, w, kernel_step);
  return placed;
}

}  // namespace jitc::inductor
