// Convolutions on channels-last operands, as Inductor's layout optimization does, where the cost says so.
// The pass converts each chosen 2-D convolution's input with a clone in channels-last layout, which fuses
// into the kernel that produces the input, and takes the convolution's output in channels-last layout,
// which the kernels that read it follow (loop_order.cpp).
// - CPU (oneDNN), per convolution: faster on NHWC activations when they are large next to the weight,
//   slower where the weight dominates (benchmarks/RESULTS.md, sessions 13 and 20). The weight is left as
//   it is: oneDNN reorders it into its own blocked layout on every call whatever its layout.
// - CUDA (cuDNN), per graph: Inductor's rule (FLOPs weighted by kind of convolution). The weight is
//   converted too (a copy per call, fused with the others into combo kernels): cuDNN's fast kernels read
//   NHWC operands, and given NCHW ones it transposes input, weight and output on every call.
#pragma once
#include "graph/graph.h"

namespace jitc::inductor {

// Applies to aten::conv2d nodes on static 4-D tensors (CPU: float32 with oneDNN enabled; CUDA: half,
// bfloat16, and float32 where TF32 is off, with cuDNN enabled) whose output is not a graph output, shares its storage with
// nothing, and is read only by lowered ops that are not views: their kernels read it through its strides,
// whatever they are. An extern convolution's output that comes back in another layout is copied into the
// one recorded here (restride_outputs). Returns g unchanged where nothing applies.
graph::Graph convolutions_in_channels_last(const graph::Graph& g);

}  // namespace jitc::inductor
