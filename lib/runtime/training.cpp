#include "runtime/training.h"

#include "runtime/eager_replay.h"
#include "runtime/program.h"

#include <jitc/errors.h>

#include <fmt/format.h>
#include <torch/csrc/autograd/custom_function.h>

namespace jitc::runtime {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What the Function's forward needs of the call, and its backward of the entry.
struct ForwardCall {
  const Entry& entry;
  const graph::Graph& graph;
  std::vector<at::Tensor>& values;
  const std::function<bool()>& forward;
  const std::string& name;
  bool completed = false;
};

struct BackwardState : torch::CustomClassHolder {
  std::shared_ptr<const BackwardPart> part;
  std::string name;
};

// Runs the backward entry over `values` (inputs filled): its program, or eager replay where it has none
// or where a run-time check of a kernel failed (replay raises eager's error).
void run_backward_graph(const Entry& backward, std::vector<at::Tensor>& values) {
  const Program* program = backward.program_built.load(std::memory_order_acquire) ? backward.program.get() : nullptr;
  std::string why;
  bool completed = false;
  if (program) {
    try {
      completed = program->run(values, nullptr, &why);
    } catch (const ChecksFailed&) {
      program = nullptr;
    }
  }
  if (!program) completed = replay(backward.graph, {&values, nullptr}, &why);
  if (!completed) throw InternalError("the backward graph of a compiled function has a failed check: " + why);
}

const graph::Graph& graph_of(const Entry& e) {
  return e.program_built.load(std::memory_order_acquire) && e.program ? e.program->graph() : e.graph;
}

class CompiledFunction : public torch::autograd::Function<CompiledFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, ForwardCall* call, at::TensorList /*linked inputs*/) {
    call->completed = call->forward();
    if (!call->completed) return {};
    const BackwardPart& part = *call->entry.backward;
    const auto& outputs = call->graph.outputs;
    const size_t first_saved = outputs.size() - part.saved;
    variable_list saved;
    for (size_t k = first_saved; k < outputs.size(); ++k) saved.push_back(call->values[outputs[k]]);
    ctx->save_for_backward(saved);
    auto state = c10::make_intrusive<BackwardState>();
    state->part = call->entry.backward;
    state->name = call->name;
    ctx->saved_data["jitc"] = c10::IValue::make_capsule(std::move(state));
    variable_list differentiable;
    for (size_t leaf : part.outputs) differentiable.push_back(call->values[outputs[leaf]]);
    return differentiable;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto state = c10::static_intrusive_pointer_cast<BackwardState>(ctx->saved_data["jitc"].toCapsule());
    if (at::GradMode::is_enabled())
      throw UnsupportedError(
          fmt::format("jitc: double backward (create_graph=true) through the compiled function '{}' is not supported: its backward runs "
                      "compiled code that autograd cannot differentiate again. Call the function uncompiled where you need "
                      "higher-order gradients",
                      state->name));
    const BackwardPart& part = *state->part;
    const Entry& backward = *part.entry;
    const graph::Graph& g = graph_of(backward);
    std::vector<at::Tensor> values(g.values.size());
    const variable_list saved = ctx->get_saved_variables();
    for (size_t k = 0; k < saved.size(); ++k) values[g.inputs[k].value] = saved[k];
    // The backward graph was traced with contiguous tangents; a gradient arriving otherwise laid out (the
    // expanded gradient of a sum) is copied to that layout.
    for (size_t j = 0; j < grads.size(); ++j) values[g.inputs[saved.size() + j].value] = grads[j].contiguous();
    {
      at::AutoGradMode no_grad(false);
      ExcludeBelowAutograd below;
      run_backward_graph(backward, values);
    }
    variable_list out{at::Tensor()};  // the ForwardCall argument has no gradient
    for (graph::ValueId v : g.outputs) out.push_back(v == graph::kNoValue ? at::Tensor() : values[v]);
    return out;
  }
};

}  // namespace

bool run_training(const Entry& entry, const graph::Graph& graph, std::vector<at::Tensor>& values, const std::function<bool()>& forward,
                  const std::string& name) {
  const BackwardPart& part = *entry.backward;
  std::vector<at::Tensor> linked;
  for (size_t position : part.grad_inputs) linked.push_back(values[graph.inputs[position].value]);
  ForwardCall call{entry, graph, values, forward, name};
  variable_list outputs = CompiledFunction::apply(&call, at::TensorList(linked));
  if (!call.completed) return false;
  for (size_t j = 0; j < part.outputs.size(); ++j) values[graph.outputs[part.outputs[j]]] = outputs[j];
  return true;
}

}  // namespace jitc::runtime
