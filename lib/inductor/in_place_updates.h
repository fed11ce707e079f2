// Updates of graph inputs stored in place. Functionalization turns `p.sub_(u)` on an argument or a
// captured tensor into a new value and a write-back `copy_(p, new value)` at the end of the graph, so a
// kernel computing the new value writes a fresh buffer that the write-back then copies into p: twice
// eager's memory traffic for an optimizer step, and a buffer per parameter. Where a pointwise kernel
// computes the new value, reads p only at the element it writes, and nothing reads p's memory between
// that kernel and the write-back, the kernel reads and writes p's memory through one buffer (Inductor's
// in-out buffers): the new value is never allocated and the write-back, a copy of p onto itself, is
// left out. Not in plans with run-time checks or graph breaks: a failed check replays the
// call eagerly from the arguments as they were, and a failed break check restores the inputs written
// before the break; both rely on the plan writing inputs only in its epilogue.
#pragma once
#include "graph/graph.h"
#include "inductor/scheduler.h"

namespace jitc::inductor {

// Sets KernelLaunch::output_memory where an output can be stored into the input it updates, and points
// the kernel's loads of that input at the output's buffer, and drops the write-backs that then copy an
// input onto itself (when nothing reads their result). Returns how many outputs it placed so.
int store_input_updates_in_place(Plan& plan, const graph::Graph& g);

}  // namespace jitc::inductor
