#include "runtime/training.h"

#include "runtime/eager_replay.h"
#include "runtime/program.h"

#include <jitc/errors.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/graph_task.h>

#include <algorithm>
#include <map>
#include <optional>

namespace jitc::runtime {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// An output that is a view of a buffer of the forward's own (`(x * 2).t()`): autograd forbids writing in
// place into a view that a custom Function returned, where eager allows it. The Function returns the
// buffer instead and the view is taken after it, under autograd (AOTAutograd regenerates such views
// alike); the backward receives the buffer's gradient and takes the view's part of it as the tangent.
struct OutputView {
  std::vector<int64_t> sizes, strides, base_sizes, base_strides;
  int64_t offset = 0;  // from the buffer's storage offset
};

// Per output: its view of a buffer, where it is one that the Function returns in its place (a buffer of
// the forward's own, of the view's dtype, behind no other output and no input of `graph`). Most calls
// return no view: they pay one pass over the outputs.
std::vector<std::optional<OutputView>> outputs_as_views(const variable_list& outputs, const graph::Graph& graph,
                                                        const std::vector<at::Tensor>& values) {
  std::vector<std::optional<OutputView>> views(outputs.size());
  if (std::none_of(outputs.begin(), outputs.end(), [](const at::Tensor& t) { return t.defined() && t.is_view(); })) return views;
  std::vector<at::Tensor> inputs;
  for (const graph::Input& in : graph.inputs) inputs.push_back(values[in.value]);
  std::map<const c10::TensorImpl*, int> uses;  // tensors behind outputs and inputs
  for (const at::Tensor& t : outputs)
    if (t.defined()) ++uses[t.is_view() ? t._base().unsafeGetTensorImpl() : t.unsafeGetTensorImpl()];
  for (const at::Tensor& t : inputs)
    if (t.defined()) uses[t.is_view() ? t._base().unsafeGetTensorImpl() : t.unsafeGetTensorImpl()] += 2;
  for (size_t j = 0; j < outputs.size(); ++j) {
    const at::Tensor& t = outputs[j];
    if (!t.defined() || !t.is_view() || t._base().scalar_type() != t.scalar_type() || uses[t._base().unsafeGetTensorImpl()] != 1) continue;
    const at::TensorBase& base = t._base();
    views[j] = OutputView{t.sizes().vec(), t.strides().vec(), base.sizes().vec(), base.strides().vec(),
                          t.storage_offset() - base.storage_offset()};
  }
  return views;
}

// The tangent of an output returned as its buffer: the view's part of the buffer's gradient.
at::Tensor gradient_of_view(const at::Tensor& base_gradient, const OutputView& view) {
  at::Tensor laid_out = base_gradient;  // as_strided's backward lays it out as the buffer
  if (base_gradient.sizes() != view.base_sizes || base_gradient.strides() != view.base_strides) {
    laid_out = at::empty_strided(view.base_sizes, view.base_strides, base_gradient.options());
    laid_out.copy_(base_gradient);
  }
  return laid_out.as_strided(view.sizes, view.strides, laid_out.storage_offset() + view.offset);
}

// What the Function's forward needs of the call, and its backward of the entry.
struct ForwardCall {
  const Entry& entry;
  const graph::Graph& graph;
  std::vector<at::Tensor>& values;
  const std::function<bool()>& forward;
  const std::string& name;
  const int64_t* symbols;  // a symbolic entry's symbol values for this call (the backward runs with them too)
  // Saved values that are inputs of the forward, with their versions before it ran: one the forward then
  // writes in place no longer holds what the backward needs (eager's backward raises; so does this one).
  std::vector<std::pair<size_t, uint32_t>> input_versions;
  std::vector<std::optional<OutputView>> views;  // per differentiable output (outputs_as_views)
  bool completed = false;
};

// The saved values are held here rather than through save_for_backward, so that a backward that does not
// keep its graph can hand them to the backward program, which drops each after its last read (eager frees
// a node's saved tensors as its backward runs). They are detached aliases (outputs among them would
// otherwise hold this node through their grad_fn: a cycle); their versions are checked as
// SavedVariable checks them.
struct BackwardState : torch::CustomClassHolder {
  std::shared_ptr<const BackwardPart> part;
  std::string name;
  std::vector<at::Tensor> saved;
  std::vector<uint32_t> versions;
  std::vector<int64_t> symbols;
  std::vector<std::optional<OutputView>> views;  // per differentiable output
  bool freed = false;
};

void check_versions(const BackwardState& state) {
  for (size_t k = 0; k < state.saved.size(); ++k) {
    const at::Tensor& t = state.saved[k];
    if (t._version() != state.versions[k])
      throw c10::Error(
          fmt::format("one of the variables needed for gradient computation has been modified by an inplace operation: "
                      "[{} [{}]], which is saved by the compiled function '{}', is at version {}; expected version {} "
                      "instead. Hint: clone it before modifying it in place, or modify it after backward",
                      t.toString(), fmt::join(t.sizes(), ", "), state.name, t._version(), state.versions[k]));
  }
}

// The saved values for one backward; moved out when autograd will not run this graph again.
std::vector<at::Tensor> take_saved(BackwardState& state) {
  if (state.freed)
    throw c10::Error(
        "Trying to backward through the graph a second time (or directly access saved tensors after they have already been "
        "freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify "
        "retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors "
        "after calling backward.");
  check_versions(state);
  if (torch::autograd::get_current_graph_task_keep_graph()) return state.saved;
  state.freed = true;
  return std::move(state.saved);
}

// Runs the backward entry over `values` (inputs filled for `program`'s graph, or the entry's where it is
// null): its program, or eager replay where it has none. A failed run-time check cannot be replayed (the
// program released the saved values it read): its error says what failed.
void run_backward_graph(const Entry& backward, const Program* program, std::vector<at::Tensor>& values, const int64_t* symbols) {
  std::string why;
  bool completed = false;
  try {
    completed = program ? program->run(values, symbols, &why) : replay(backward.graph, {&values, symbols, /*traced_layouts=*/true}, &why);
  } catch (const ChecksFailed& failed) {
    throw c10::Error(
        fmt::format("jitc: a run-time check of kernel {} of a compiled backward failed: an index out of range or an integer "
                    "division by zero in the gradient's computation",
                    failed.kernel));
  }
  if (!completed) throw InternalError("the backward graph of a compiled function has a failed check: " + why);
}

// The entry's program, read once per call: a build in the background may finish while the call runs.
const Program* program_of(const Entry& e) { return e.program_built.load(std::memory_order_acquire) ? e.program.get() : nullptr; }

class CompiledFunction : public torch::autograd::Function<CompiledFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, ForwardCall* call, at::TensorList /*linked inputs*/) {
    {
      // The joint graph was traced in grad mode, and some kernels read it (mkldnn's LSTM returns the
      // workspace its backward needs only then). Autograd itself stays out: the program runs below it.
      at::AutoGradMode traced_mode(true);
      call->completed = call->forward();
    }
    if (!call->completed) return {};
    const BackwardPart& part = *call->entry.backward;
    const auto& outputs = call->graph.outputs;
    const size_t first_saved = outputs.size() - part.saved;
    auto state = c10::make_intrusive<BackwardState>();
    state->part = call->entry.backward;
    state->name = call->name;
    if (const int n = call->entry.graph.num_symbols; n > 0) state->symbols.assign(call->symbols, call->symbols + n);
    for (size_t k = first_saved; k < outputs.size(); ++k) {
      state->saved.push_back(call->values[outputs[k]].detach());  // shares the version counter
      state->versions.push_back(state->saved.back()._version());
    }
    for (const auto& [k, version] : call->input_versions) state->versions[k] = version;
    variable_list differentiable;
    for (size_t leaf : part.outputs) differentiable.push_back(call->values[outputs[leaf]]);
    call->views = state->views = outputs_as_views(differentiable, call->graph, call->values);
    for (size_t j = 0; j < differentiable.size(); ++j)
      if (call->views[j]) differentiable[j] = at::Tensor(differentiable[j]._base());
    ctx->saved_data["jitc"] = c10::IValue::make_capsule(std::move(state));
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
    const Program* program = program_of(backward);
    const graph::Graph& g = program ? program->graph() : backward.graph;
    std::vector<at::Tensor> values(g.values.size());
    std::vector<at::Tensor> saved = take_saved(*state);
    const size_t saved_count = saved.size();
    // A saved value arrives in the layout the backward graph reads it in (inductor/channels_last.h), or
    // is copied to it (a forward that ran otherwise: eager replay).
    const int64_t* symbols = state->symbols.empty() ? nullptr : state->symbols.data();
    for (size_t k = 0; k < saved_count; ++k) {
      const graph::Value& input = g.values[g.inputs[k].value];
      values[g.inputs[k].value] = saved[k].defined() ? in_layout(saved[k], input.meta, symbols) : std::move(saved[k]);
    }
    saved.clear();
    // The backward graph was traced with contiguous tangents; a gradient arriving otherwise laid out (the
    // expanded gradient of a sum) is copied to that layout.
    for (size_t j = 0; j < grads.size(); ++j) {
      if (j < state->views.size() && state->views[j] && grads[j].defined()) grads[j] = gradient_of_view(grads[j], *state->views[j]);
      values[g.inputs[saved_count + j].value] = grads[j].contiguous();
    }
    grads.clear();
    {
      at::AutoGradMode no_grad(false);
      ExcludeBelowAutograd below;
      run_backward_graph(backward, program, values, symbols);
    }
    variable_list out{at::Tensor()};  // the ForwardCall argument has no gradient
    for (graph::ValueId v : g.outputs) out.push_back(v == graph::kNoValue ? at::Tensor() : values[v]);
    return out;
  }
};

}  // namespace

bool run_training(const Entry& entry, const graph::Graph& graph, std::vector<at::Tensor>& values, const std::function<bool()>& forward,
                  const std::string& name, const int64_t* symbols) {
  const BackwardPart& part = *entry.backward;
  std::vector<at::Tensor> linked;
  for (size_t position : part.grad_inputs) linked.push_back(values[graph.inputs[position].value]);
  ForwardCall call{entry, graph, values, forward, name, symbols};
  for (const auto& [k, position] : part.saved_inputs)
    if (const at::Tensor& t = values[graph.inputs[position].value]; t.defined()) call.input_versions.emplace_back(k, t._version());
  variable_list outputs = CompiledFunction::apply(&call, at::TensorList(linked));
  if (!call.completed) return false;
  for (size_t j = 0; j < part.outputs.size(); ++j) {
    const auto& view = call.views[j];
    values[graph.outputs[part.outputs[j]]] =
        view ? outputs[j].as_strided(view->sizes, view->strides, outputs[j].storage_offset() + view->offset) : outputs[j];
  }
  return true;
}

}  // namespace jitc::runtime
