// Dim collapsing for pointwise kernels: a tiled kernel's tiles cut its innermost dim, so a short innermost
// dim (the 56 of an NCHW activation [32, 64, 56, 56]) makes tiles of 56 elements, and a CUDA block of 512
// threads would keep 14 of them busy. Where every access steps through the last outer dim and the inner
// dim as one contiguous run (h * 56 + w), the two merge into one inner dim of 3136 elements, as Inductor
// collapses contiguous dims.
#pragma once
#include "inductor/kernel_ir.h"

namespace jitc::inductor {

// Merges outer dims into the inner dim of a tiled kernel (tile > 0, one inner var, constant extents) while
// every load and store address is affine in both vars with coefficient(outer) == coefficient(inner) *
// extent(inner), and no other expression uses them. A merged outer var keeps extent 1 and reads as 0.
// An inner dim of size 1 first hands its place to the nearest outer dim of another size.
// And while the inner dim is shorter than `divide_below` elements (0: never), an outer dim merges into it
// where some load does not run over both as one run (a channels-last activation [N, H, W, C] with
// per-channel batch-norm parameters: the 64 channels would make 64-element tiles, 8 busy threads of a
// CUDA block): those loads, and every other reader of the two vars, read the merged position through a
// division and a remainder, as Inductor indexes a collapsed range (x0 % 64). Every store must run over
// both: a value stored once per row stays so.
void collapse_inner_dims(Kernel& kernel, int64_t divide_below);

}  // namespace jitc::inductor
