// group_norm's statistics as values of their own. The tracer records aten::group_norm, whose one result
// is the normalized tensor; its mean and rstd are read per channel, not per kernel row, so a kernel of
// their own must store them (lower_reduction.cpp's native_group_norm lowering). This pass gives them
// values by recording the call as aten::native_group_norm, as ATen's own decomposition does.
#pragma once
#include "graph/graph.h"

namespace jitc::inductor {

// Rewrites aten::group_norm nodes over inputs of static sizes [N, C, *] into aten::native_group_norm(input,
// weight, bias, N, C, HxW, groups, eps), whose extra results (mean and rstd, [N, groups]) are new values.
// Returns g unchanged where there is no such node.
graph::Graph group_norm_with_stats(const graph::Graph& g);

}  // namespace jitc::inductor
