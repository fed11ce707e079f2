// The state of a compiled torch::nn module tree that its forward depends on beyond tensor metadata (see
// guards::ModuleGuard): read once per call of a compiled module, snapshotted with names when it is traced.
#pragma once
#include "guards/guard_set.h"

#include <c10/util/SmallVector.h>

namespace torch::nn {
class Module;
}

namespace jitc::runtime {

using ModuleWords = c10::SmallVector<uintptr_t, 64>;

// Hot path: walks the tree from `root` (which the compiled function keeps alive) without allocating
// beyond `out`'s inline storage for small trees.
void read_module_state(const torch::nn::Module& root, ModuleWords& out);

// The same words, with what each one is, for an entry's guards.
guards::ModuleGuard snapshot_module_state(const torch::nn::Module& root);

// Whether a parameter of the tree requires grad: a call in grad mode is then traced for training at once.
bool any_parameter_requires_grad(const torch::nn::Module& root);

}  // namespace jitc::runtime
