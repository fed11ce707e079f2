#include "tracer/backward_trace.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/add.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <map>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace jitc::tracer {

namespace {

using torch::autograd::Edge;
using torch::autograd::Node;

[[noreturn]] void unsupported(std::string why) { throw TraceFailure(TraceFailure::Kind::kTrainingUnsupported, std::move(why)); }

// Autograd's engine, reduced to what a trace needs: one thread, no streams, no re-entrancy. Ready nodes
// run latest-created first (the engine's priority by sequence number); gradients meeting at one input
// are summed as they arrive.
class BackwardWalk {
 public:
  explicit BackwardWalk(TraceSession& session) : session_(session) {}

  void deliver(const Edge& edge, const at::Tensor& grad) {
    if (!edge.is_valid()) return;
    auto& buffer = buffers_[edge.function.get()];
    if (buffer.empty()) buffer.resize(edge.function->num_inputs());
    if (!grad.defined()) return;
    at::Tensor& slot = buffer[edge.input_nr];
    slot = slot.defined() ? at::add(slot, grad) : grad;
  }

  void add_root(const Edge& edge) {
    if (edge.is_valid()) roots_.push_back(edge.function);
  }

  // Runs every node reachable from the roots; returns the gradient reaching each graph input position.
  std::map<int, at::Tensor> run() {
    count_dependencies();
    std::priority_queue<std::pair<uint64_t, Node*>> ready;
    for (const auto& root : roots_)
      if (dependencies_[root.get()] == 0 && queued_.insert(root.get()).second) ready.emplace(root->sequence_nr(), root.get());
    while (!ready.empty()) {
      Node* node = ready.top().second;
      ready.pop();
      run_node(*node);
      for (const Edge& next : node->next_edges())
        if (next.is_valid() && --dependencies_[next.function.get()] == 0) ready.emplace(next.function->sequence_nr(), next.function.get());
    }
    return std::move(grads_);
  }

 private:
  void count_dependencies() {
    std::vector<Node*> stack;
    std::unordered_map<Node*, bool> seen;
    for (const auto& root : roots_)
      if (!seen[root.get()]) seen[root.get()] = true, stack.push_back(root.get());
    while (!stack.empty()) {
      Node* node = stack.back();
      stack.pop_back();
      for (const Edge& next : node->next_edges()) {
        if (!next.is_valid()) continue;
        dependencies_[next.function.get()] += 1;
        if (!seen[next.function.get()]) seen[next.function.get()] = true, stack.push_back(next.function.get());
      }
    }
  }

  void run_node(Node& node) {
    std::vector<at::Tensor> inputs = std::move(buffers_[&node]);
    inputs.resize(node.num_inputs());
    if (auto* accumulate = dynamic_cast<torch::autograd::AccumulateGrad*>(&node)) {
      const int position = session_.input_position(accumulate->variable.unsafeGetTensorImpl());
      if (position < 0) unsupported("a gradient reaches a tensor that is neither an argument nor a captured leaf");
      grads_[position] = inputs[0];
      return;
    }
    if (!node.tensor_pre_hooks().empty() || !node.pre_hooks().empty() || !node.post_hooks().empty() || !node.retains_grad_hooks().empty())
      unsupported(fmt::format("a hook (register_hook, retain_grad) on a tensor computed inside the callable ({})", node.name()));
    std::vector<at::Tensor> outputs = node(std::move(inputs));
    torch::autograd::validate_outputs(node.next_edges(), outputs, [&](const std::string& message) {
      return fmt::format("Function {} returned an {}", node.name(), message);
    });
    for (size_t i = 0; i < outputs.size() && i < node.num_outputs(); ++i) deliver(node.next_edge(i), outputs[i]);
  }

  TraceSession& session_;
  std::vector<std::shared_ptr<Node>> roots_;
  std::unordered_map<Node*, std::vector<at::Tensor>> buffers_;
  std::unordered_map<Node*, int> dependencies_;
  std::unordered_set<Node*> queued_;
  std::map<int, at::Tensor> grads_;
};

}  // namespace

BackwardRecord record_backward(TraceSession& session, const detail::ResultLeaves& result) {
  BackwardRecord record;
  record.forward_nodes = session.node_count();
  BackwardWalk walk(session);
  std::vector<graph::ValueId> seen_outputs;
  at::NoGradGuard no_grad;  // the engine runs backward formulas with grad mode = create_graph (false)
  for (size_t k = 0; k < result.size(); ++k) {
    const at::Tensor& t = result[k].tensor;
    if (result[k].kind != detail::ResultLeaf::Kind::kTensor || !t.defined() || !t.requires_grad()) continue;
    const graph::ValueId v = session.value_of_tensor(t);
    if (std::find(seen_outputs.begin(), seen_outputs.end(), v) != seen_outputs.end())
      unsupported("the callable returns the same differentiable tensor twice");
    seen_outputs.push_back(v);
    const Edge edge = torch::autograd::impl::gradient_edge(t);
    at::Tensor tangent;
    size_t position = 0;
    {
      c10::impl::ExcludeDispatchKeyGuard real(kTracerKey);
      const auto* tracer = as_tracer(t);
      tangent = session.wrap_tangent(tracer ? tracer->shadow() : t, record.outputs.size(), &position);
    }
    record.outputs.push_back(k);
    record.tangents.push_back(position);
    walk.add_root(edge);
    walk.deliver(edge, tangent);
  }
  for (auto& [position, grad] : walk.run()) {
    record.grad_inputs.push_back(static_cast<size_t>(position));
    record.input_grads.push_back(grad.defined() ? session.value_of_tensor(grad) : graph::kNoValue);
  }
  return record;
}

}  // namespace jitc::tracer
