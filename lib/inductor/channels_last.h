// Convolutions on channels-last operands, as Inductor's layout optimization does, where the cost says so
// (oneDNN's CPU convolution is faster on NHWC activations when they are large next to the weight; slower
// where the weight dominates: benchmarks/RESULTS.md, sessions 13, 20 and 27). A chosen 2-D convolution's
// input that a kernel computes and only kernels and convolutions read is computed channels-last itself;
// any other input (a graph input) goes through a clone in channels-last layout. The convolution's output
// is taken channels-last, which the kernels that read it follow (loop_order.cpp). The weight is left as it is: oneDNN reorders it into its
// own blocked layout on every call whatever its layout, so a channels-last copy made per call would be one copy more.
#pragma once
#include "graph/graph.h"

namespace jitc::inductor {

// Applies to aten::conv2d nodes on static float32 CPU tensors when oneDNN is available and enabled, whose
// input has at least twice the weight's elements, whose output is not a graph output, shares its storage with nothing, and is read only by
// lowered ops that are not views: their kernels read it through its strides, whatever they are. Returns g unchanged otherwise.
graph::Graph convolutions_in_channels_last(const graph::Graph& g);

}  // namespace jitc::inductor
