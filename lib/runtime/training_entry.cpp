// Engine: the entry of a training trace. Its joint graph is split into a forward graph (the entry's own,
// guarded and run like any entry) and a backward graph (an entry without guards that autograd runs).
#include "graph/generalize.h"
#include "graph/partition.h"
#include "graph/passes.h"
#include "inductor/backend.h"
#include "inductor/channels_last.h"
#include "inductor/decompositions.h"
#include "runtime/engine.h"
#include "runtime/log.h"

#include <fmt/format.h>

#include <algorithm>

namespace jitc::detail {

namespace {

// A joint graph input's position in the forward graph, which lacks the tangents.
size_t forward_position(size_t joint_position, const std::vector<size_t>& tangents) {
  return joint_position -
         static_cast<size_t>(std::count_if(tangents.begin(), tangents.end(), [&](size_t t) { return t < joint_position; }));
}

std::string saved_text(const graph::Graph& forward, size_t saved) {
  std::string text;
  for (size_t k = forward.outputs.size() - saved; k < forward.outputs.size(); ++k) {
    const auto& meta = forward.values[forward.outputs[k]].meta;
    text += fmt::format("\n  saved[{}]: v{} {}{}", k - (forward.outputs.size() - saved), forward.outputs[k], graph::dtype_name(meta.dtype),
                        graph::to_string(meta.sizes));
  }
  return text;
}

// The backward graph's entry: no guards (autograd runs it with the forward's symbol values).
std::shared_ptr<runtime::Entry> backward_entry(graph::Graph traced) {
  auto backward = std::make_shared<runtime::Entry>();
  backward->part = "backward";
  backward->graph = graph::eliminate_common_subexpressions(graph::eliminate_dead_code(traced));
  graph::verify(backward->graph);
  backward->traced = std::move(traced);
  return backward;
}

// Whether the backend of one of the graph's devices fits symbolic backwards from decomposed batch norms
// (Target::symbolic_backward_decomposes_batch_norms: CUDA's does).
bool decomposes_batch_norms(const graph::Graph& g) {
  return std::any_of(g.values.begin(), g.values.end(), [](const graph::Value& v) {
    const inductor::Backend* backend = inductor::backend_for(v.meta.device.type());
    return backend && backend->target().symbolic_backward_decomposes_batch_norms;
  });
}

// A symbolic backward fitted from the two traces with their training batch norms decomposed (the
// decomposition reads static sizes, so it cannot run on the symbolic graph), or nullopt where those do not
// generalize.
std::optional<graph::Graph> generalize_decomposed(const graph::Graph& a, const graph::Graph& b, const graph::SymbolValues& values) {
  std::string ignored;
  return graph::generalize(inductor::decompose_batch_norm_training(a, /*integer_counts=*/true),
                           inductor::decompose_batch_norm_training(b, /*integer_counts=*/true), values, &ignored);
}

}  // namespace

std::shared_ptr<const runtime::BackwardPart> Engine::generalized_backward(const runtime::Entry& a, const runtime::Entry& b,
                                                                          const graph::SymbolValues& values) const {
  if (!a.backward->same_layout(*b.backward)) return nullptr;
  std::string why;
  std::optional<graph::Graph> g;
  if (decomposes_batch_norms(a.backward->entry->traced))
    g = generalize_decomposed(a.backward->entry->traced, b.backward->entry->traced, values);
  if (!g) g = graph::generalize(a.backward->entry->traced, b.backward->entry->traced, values, &why);
  if (!g) {
    runtime::log(runtime::Artifact::kDynamic, fmt::format("keeping sizes static for the backward of '{}': {}", name_, why));
    return nullptr;
  }
  auto part = std::make_shared<runtime::BackwardPart>(*b.backward);
  part->entry = backward_entry(std::move(*g));
  return part;
}

std::shared_ptr<runtime::Entry> Engine::make_training_entry(const tracer::TraceOutcome& outcome, c10::ArrayRef<Leaf> leaves,
                                                            const std::vector<uint64_t>& dynamic_dims) {
  const tracer::BackwardRecord& record = *outcome.backward;
  const graph::Graph joint = inductor::native_batch_norms(outcome.graph);  // node for node: the record's positions hold
  graph::SplitGraphs split = graph::split_joint({&joint, record.forward_nodes, record.tangents, record.input_grads});
  std::vector<size_t> channels_last = inductor::lay_out_saved_channels_last(split.forward, split.saved, split.backward);
  auto entry = make_entry(std::move(split.forward), leaves, outcome.result, dynamic_dims, {});
  auto part = std::make_shared<runtime::BackwardPart>();
  part->outputs = record.outputs;
  part->saved = split.saved;
  part->channels_last_saved = std::move(channels_last);
  for (size_t p : record.grad_inputs) part->grad_inputs.push_back(forward_position(p, record.tangents));
  const auto& outputs = entry->graph.outputs;
  for (size_t k = outputs.size() - split.saved; k < outputs.size(); ++k)
    for (size_t p = 0; p < entry->graph.inputs.size(); ++p)
      if (entry->graph.inputs[p].value == outputs[k]) part->saved_inputs.emplace_back(k - (outputs.size() - split.saved), p);
  part->entry = backward_entry(std::move(split.backward));
  if (runtime::log_enabled(runtime::Artifact::kAotGraphs))
    runtime::log(runtime::Artifact::kAotGraphs,
                 fmt::format("TRAINING GRAPHS of {}: {} saved values ({} channels-last), {} recomputed by the backward{}\n"
                             "===== forward graph =====\n{}\n===== backward graph =====\n{}",
                             name_, split.saved, part->channels_last_saved.size(), split.recomputed, saved_text(entry->graph, split.saved),
                             graph::to_text(entry->graph), graph::to_text(part->entry->graph)));
  entry->backward = std::move(part);
  return entry;
}

}  // namespace jitc::detail
