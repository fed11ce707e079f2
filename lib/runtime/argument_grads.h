// The gradients of a call's tensor arguments as leaves of their own. A callable that reads p.grad() of an
// argument p (an optimizer step written over parameter lists) cannot take the gradient through an op: it
// is autograd's field. Once a trace has met such a read (TraceFailure::Kind::kArgumentGrad), every call of
// that function passes, after its own leaves, the gradient of each argument that is an autograd leaf
// requiring grad with a gradient defined: a tensor leaf with argument -1 whose `i` is its owner's leaf.
// The trace gives the owner's stand-in that leaf's stand-in as its gradient, the guards check it like any
// argument (one more or one fewer gradient is another argument structure), and a write into it (grad.zero_())
// lands in the real gradient like any argument's.
#pragma once
#include <jitc/detail/leaves.h>

#include <c10/util/ArrayRef.h>

namespace jitc::runtime {

// `leaves` followed by their arguments' gradients, kept in `storage`; `leaves` itself when none has one.
c10::ArrayRef<detail::Leaf> with_argument_grads(c10::ArrayRef<detail::Leaf> leaves, detail::Leaves& storage);

// Whether leaf is the gradient of another leaf (with_argument_grads).
inline bool is_argument_grad(const detail::Leaf& leaf) { return leaf.kind == detail::Leaf::Kind::kTensor && leaf.argument < 0; }

}  // namespace jitc::runtime
