// Values worth storing although no consumer requires a buffer. A value read by several nodes is inlined
// into each of their kernels; when computing it reads many buffers (a transformer's residual stream: the
// embedding plus every block's output so far), every consumer reads them all again and the work grows
// with the depth of the chain (GPT-2's last layer_norm kernel read 26 buffers). Such a value is stored
// once, as Inductor realizes a buffer that is read more than once and whose expression reads 4 buffers or
// more (its realize_reads_threshold).
#pragma once
#include "graph/graph.h"

#include <functional>
#include <vector>

namespace jitc::inductor {

inline constexpr size_t kSharedChainSources = 4;

// In node order: lowered, non-view values read by two nodes or more whose computation reads at least
// kSharedChainSources distinct buffers (graph inputs, outputs of extern nodes, values already chosen).
// `computed(v)`: v has a loader (nodes that run as extern calls give buffers); `view(v)`: v is a lowered view.
std::vector<graph::ValueId> shared_chains(const graph::Graph& g, const std::function<bool(graph::ValueId)>& computed,
                                          const std::function<bool(graph::ValueId)>& view);

// Lowered, non-view values whose readers lie on both sides of an extern call, where the buffers they are
// computed from are twice their size or more: the readers fall into kernels on either side, and
// each such kernel computes the value again, so those buffers stay live across the call where storing the
// value frees them. A residual block's backward: the gradient through the block's last relu, read by its
// batch norm's backward and, after the branch's convolutions, by the sum for the skip, kept both incoming
// gradients and the saved activation live through both convolutions' backward; eager holds the one
// gradient. Only buffers the value's computation reads last count (graph inputs only when the program
// owns them, values alone in their storage). `buffer(v)`: v is read from memory, not computed inline.
std::vector<graph::ValueId> values_read_across_extern_calls(const graph::Graph& g, const std::function<bool(graph::ValueId)>& buffer,
                                                            const std::function<bool(graph::ValueId)>& view,
                                                            const std::function<bool(size_t)>& is_extern);

// Computed values whose views extern calls or the caller need as tensors, and whose needed views cover
// at least as many elements as the value has: a projection split into q, k and v, each transposed into
// attention (an extern call). Storing each view as a buffer of its own writes them in their strided
// layouts, one short row (a head's 64 elements) per kernel row; storing the value once, in its own
// layout, and passing real views of it (as eager does) writes it in long contiguous rows.
// `viewed(v)`: what the lowered view v views, kNoValue for other values; `is_extern(i)`: node i runs as an
// extern call. Static sizes only; never a value an extern call writes into (through a view or not).
std::vector<graph::ValueId> roots_of_needed_views(const graph::Graph& g, const std::function<bool(graph::ValueId)>& computed,
                                                  const std::function<graph::ValueId(graph::ValueId)>& viewed,
                                                  const std::function<bool(size_t)>& is_extern);

}  // namespace jitc::inductor
