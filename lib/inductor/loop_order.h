// Loop order for pointwise kernels: a kernel's loops run over its output's logical dims, innermost last.
// For an output whose memory order differs (a channels-last activation [N, C, H, W] is stored as
// [N, H, W, C]), that puts a stride-C store in the inner loop: every store touches another cache line and
// nothing vectorizes. Inductor orders a kernel's loops by the strides of what it stores; so does this.
#pragma once
#include "inductor/kernel_ir.h"

namespace jitc::inductor {

// Reorders the vars of a tiled pointwise kernel (tile > 0, one inner var, no reductions, constant
// extents) by decreasing stride in the addresses it stores to, so that the var with stride 1 becomes the
// inner one. Leaves the kernel as it is unless every store address is affine in the vars and all stores
// agree on that order, and when the inner var already has stride 1. Run it before collapse_inner_dims,
// which then merges the dims that the new order makes contiguous.
void order_loops_as_stored(Kernel& kernel);

}  // namespace jitc::inductor
