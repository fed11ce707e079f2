// Convolutions on channels-last operands, as Inductor's layout optimization does. oneDNN's CPU
// convolution reorders NCHW operands on every call; on NHWC ones it runs directly (a [8, 64, 56, 56] 3x3
// convolution on the 2-core machine measured faster so; benchmarks/RESULTS.md, Fused CPU kernels,
// session 13). The pass converts each 2-D convolution's input and weight with a clone in channels-last
// layout, which fuses into the kernel that produces the input, and takes the convolution's output in
// channels-last layout, which the kernels that read it follow (loop_order.cpp).
#pragma once
#include "graph/graph.h"

namespace jitc::inductor {

// Applies to aten::conv2d nodes on static float32 CPU tensors when oneDNN is available and enabled, whose
// output is not a graph output, shares its storage with nothing, and is read only by lowered ops that are
// not views: their kernels read it through its strides, whatever they are. Returns g unchanged otherwise.
graph::Graph convolutions_in_channels_last(const graph::Graph& g);

}  // namespace jitc::inductor
