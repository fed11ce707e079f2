// Reductions of one row that run over the same space and do not read each other print as one loop:
// a batch norm's backward sums dy and (x - mean) * dy per channel, a layer norm's backward dy * w and
// dy * w * xhat per row. Each in its own loop reads its operands once per loop (dy and the activation
// twice, a ReLU's mask twice); in one loop they are read once, into one accumulator each, and the
// generated code holds the operands' index arithmetic once.
#pragma once
#include "inductor/kernel_ir.h"

namespace jitc::inductor {

// Moves every reduction whose loop has the extents of an earlier reduction's loop, and which reads (through
// its operands and whatever its loop computes) no reduction from that earlier one on, into the earlier
// one's loop: its loop's variables are replaced by the earlier loop's, expressions that become the same
// are shared, and its emptied loop is removed. Arg reductions keep their own loops. Each reduction folds
// the same values in the same order as before: the same results, bit for bit.
void merge_reduction_loops(Kernel& kernel);

}  // namespace jitc::inductor
