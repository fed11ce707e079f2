// Weights the callable captured, prepacked for oneDNN once (and batch norms folded into convolutions),
// as Inductor's freezing does for CPU inference (binary folding, mkldnn weight prepacking), without
// freezing's assumption that parameters never change: the folded and prepacked weights are derived values
// (graph::NodeKind::kDerived), computed again on the first call after a parameter they come from changed
// (runtime/derived_values.h says how a change is seen, and which writes through `.data()` are not).
//
// Why: ATen's convolution reorders a dense weight into oneDNN's blocked layout on every call (and copies
// it to channels-last first where the input is channels-last), and ATen's linear layers multiply by the
// weight as stored; the prepacked weight skips the reorders and suits oneDNN's kernels. A folded batch
// norm leaves its kernel nothing but what follows it. The activation that follows (ReLU, ReLU6) stays a
// kernel: oneDNN's fused post-ops turn a NaN into 0 where eager's keep it.
#pragma once
#include "graph/graph.h"
#include "inductor/emitter.h"

#include <unordered_set>
#include <vector>

namespace jitc::inductor {

// Per node of g: whether it is a conv2d whose weight, and bias if any, are float32 tensors the callable
// captured (module parameters) and the graph does not write: its weight can be prepacked.
std::vector<bool> prepackable_convolutions(const graph::Graph& g);

// Rewrites, when oneDNN is available and enabled, every prepackable aten::conv2d whose input and output
// are channels-last (convolutions_in_channels_last chose them) into mkldnn::_convolution_pointwise on the
// prepacked weight, and, where its only reader is an inference batch_norm of captured statistics whose
// result keeps the convolution's layout, the pair into one such convolution on the folded weight and
// bias (frozen_convolutions.cpp). Returns g unchanged where none applies.
graph::Graph freeze_convolutions(const graph::Graph& g);

// Rewrites, when oneDNN is available and enabled, addmm(bias, x, t(w)), mm(x, t(w)) and matmul(x, t(w))
// of float32 CPU x (its leading dims may be symbolic) and a captured, unwritten 2-D weight w (a Linear layer, traced) into
// mkldnn::_linear_pointwise on the prepacked weight (frozen_linears.cpp). Returns g unchanged where none
// applies.
graph::Graph freeze_linears(const graph::Graph& g);

// Shared by both passes (frozen_inputs.cpp).
class FrozenInputs {
 public:
  explicit FrozenInputs(const graph::Graph& g);
  // A graph input the callable captured (or a constant it made), float32 on the CPU, of static sizes and
  // `rank` dims, that the graph does not write and that is not an inference tensor: what a derived value
  // may be computed from.
  bool frozen(const graph::Arg& a, size_t rank) const;

 private:
  const graph::Graph& g_;
  std::unordered_set<int32_t> written_;  // storage ids some node writes
};

// An optional tensor argument not given (traced as None or as an undefined tensor).
bool is_none(const graph::Arg& a);
// Appends a node computing a derived float32 value of these sizes (from captured tensors only).
graph::ValueId emit_derived(Emitter& e, const char* name, const char* overload, std::vector<graph::Arg> args, std::vector<int64_t> sizes);

}  // namespace jitc::inductor
