// Convolutions on channels-last operands, as Inductor's layout optimization does.
// On the CPU, where the cost says so (oneDNN's convolution is faster on NHWC activations when they are
// large next to the weight; slower where the weight dominates: benchmarks/RESULTS.md, sessions 13, 20 and
// 27). A chosen 2-D convolution's input that a kernel computes and only kernels and convolutions read is
// computed channels-last itself; any other input (a graph input) goes through a clone in channels-last
// layout. The convolution's output is taken channels-last, which the kernels that read it follow
// (loop_order.cpp). The weight is left as it is: oneDNN reorders it into its own blocked layout on every
// call whatever its layout, so a channels-last copy made per call would be one copy more; a weight the
// callable captured is prepacked once instead (frozen_weights.h), and its convolution is then chosen
// whatever the cost rule says.
// On CUDA, every half and bfloat16 convolution: cuDNN's tensor-core kernels are NHWC and transpose NCHW
// operands and results inside each call. cuDNN computes in the weight's layout, so the weight goes through
// a channels-last clone too (a kernel per call, not a derived value: benchmarks/RESULTS.md, session 34).
#pragma once
#include "graph/graph.h"

#include <unordered_map>
#include <vector>

namespace jitc::inductor {

// Applies to aten::conv2d nodes on static float32 CPU tensors when oneDNN is available and enabled, whose
// input has at least twice the weight's elements (or whose weight can be prepacked), and on static half or
// bfloat16 CUDA tensors when cuDNN is available and enabled, whose output is not a graph output, shares its storage
// with nothing, and is read only by lowered ops that are not views: their kernels read it through its strides, whatever they are. Returns g
// unchanged otherwise.
graph::Graph convolutions_in_channels_last(const graph::Graph& g);

// Whether conv2d node n is a small float32 CPU convolution that ATen runs with its own kernel rather than
// oneDNN's (ATen's use_mkldnn: batch 1, one group, a kernel of at most 3 in some dim, at most 20480 input
// elements; or a 1x1 kernel on one thread) and that does under 2^20 multiply-adds. There the native kernel
// beats a oneDNN call of any layout, prepacked weight or not: oneDNN's fixed cost per call is several
// times the whole convolution (benchmarks/RESULTS.md, session 50). Such a convolution keeps its traced
// layout and its weight as stored.
bool native_convolution_is_faster(const graph::Graph& g, const graph::Node& n);

// Training graphs on the CPU (channels_last_training.cpp), as eager runs a model converted with
// .to(channels_last) and as Inductor lays out a training graph: oneDNN's forward and backward convolutions
// are faster on channels-last operands where the activations outweigh the weights. A training graph's
// values take one layout: the forward and backward programs compile apart and at once, so the layout of
// each value the backward reads is chosen when the joint graph is split, and each program keeps to it:
//   - lay_out_saved_channels_last: where the forward's 2-D convolutions read at least as many activation
//     as weight elements, the saved float32 4-D CPU values (constant channels, height and width; the
//     batch may be symbolic) that the forward computes and the backward reads only through ops that are
//     not views take the channels-last layout in the backward graph's inputs; it returns their saved
//     indices;
//   - forward_in_channels_last: the forward pipeline's last stage stores those outputs so (or saves a
//     channels-last clone), and computes every other value whose layout is free channels-last too;
//   - backward_in_channels_last: the backward pipeline's last stage does the same for its values.
// The backward copies a saved value that arrives in another layout (training.cpp), so a forward that runs
// otherwise (eager replay) stays correct.
std::vector<size_t> lay_out_saved_channels_last(const graph::Graph& forward, size_t saved, graph::Graph& backward);
graph::Graph forward_in_channels_last(const graph::Graph& forward, size_t saved, const std::vector<size_t>& indices);
graph::Graph backward_in_channels_last(const graph::Graph& backward);

// Shared by both passes: static float32 4-D CPU metadata, [N, C, H, W] strides of an [N, H, W, C] layout,
// and a channels-last clone.
bool static_float_4d_cpu(const graph::TensorMeta& m);
// Per storage id (storage ids may exceed the value count: they outlive the values DCE removes), how
// many of g's values live in it.
std::unordered_map<int32_t, int> values_per_storage(const graph::Graph& g);
graph::SymShape channels_last_strides(const graph::SymShape& sizes);
// Appends clone(v, memory_format=channels_last) to `nodes` (r's, or a list being rebuilt for r): a
// pointwise copy to the lowering, which stores it through the strides of its output's meta.
graph::ValueId append_channels_last_clone(graph::Graph& r, std::vector<graph::Node>& nodes, graph::ValueId v, int32_t storage);

}  // namespace jitc::inductor
