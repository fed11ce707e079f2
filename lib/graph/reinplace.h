// reinplace: the functional graph's updates of an input that only touch part of it, written back in place.
// Functionalization turns `cache.index_copy_(2, pos, k)` on a captured tensor into a new value
// `index_copy(cache, 2, pos, k)` and a write-back `copy_(cache, new value)` in the epilogue: two copies
// of the whole tensor per call where eager writes one slice (a decoder's static KV cache: the whole cache
// per token). Where the input's old contents are read by nothing after the update, the update runs in
// place on the input as eager ran it, and its write-back is dropped (Inductor's reinplacing pass).
#pragma once
#include "graph/graph.h"

namespace jitc::graph {

// Rewrites, in a functional graph, index_copy / index_put / scatter-style updates whose first argument
// is a graph input written back by the epilogue into their in-place forms. Returns g unchanged where
// there is nothing to rewrite.
Graph reinplace_input_updates(const Graph& g);

}  // namespace jitc::graph
