// Convolutions of captured weights prepacked for oneDNN, with an inference batch norm that follows
// folded into the weight and bias, as Inductor's freezing does for CPU inference (binary folding, then
// mkldnn weight prepacking), without freezing's assumption that parameters never change: the folded and
// prepacked weights are derived values (graph::NodeKind::kDerived), computed again on the first call after
// a parameter they come from changed (runtime/derived_values.h).
//
// Why: ATen's convolution reorders a dense weight into oneDNN's blocked layout on every call (and copies
// it to channels-last first where the input is channels-last); the prepacked weight skips both, and the
// folded batch norm leaves its kernel nothing but what follows it. The activation that follows (ReLU,
// ReLU6) stays a kernel: oneDNN's fused post-ops turn a NaN into 0 where eager's keep it.
#pragma once
#include "graph/graph.h"

#include <vector>

namespace jitc::inductor {

// Per node of g: whether it is a conv2d whose weight, and bias if any, are float32 tensors the callable
// captured (module parameters) and the graph does not write: its weight can be prepacked.
std::vector<bool> prepackable_convolutions(const graph::Graph& g);

// Rewrites, when oneDNN is available and enabled, every prepackable aten::conv2d whose input and output
// are channels-last (convolutions_in_channels_last chose them) into mkldnn::_convolution_pointwise on the
// prepacked weight, and, where its only reader is an inference batch_norm of captured statistics whose
// result keeps the convolution's layout, the pair into one such convolution on the folded weight and
// bias. Returns g unchanged where none applies.
graph::Graph freeze_convolutions(const graph::Graph& g);

}  // namespace jitc::inductor
