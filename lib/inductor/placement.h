// Where each expression of a kernel is evaluated, shared by the code generators: once per kernel
// (sizes, constants), once per row, inside one reduction loop, or inside the element loop. It follows
// from the loop variables an expression uses; a reduction's result is a row value after its loop.
#pragma once
#include "inductor/kernel_ir.h"

#include <vector>

namespace jitc::inductor {

enum class Scope { kEntry, kRow, kReduction, kElement };

struct Placement {
  std::vector<Scope> scope;  // per expression
  std::vector<int> loop;     // kReduction: the reduction loop; else -1
};

Placement place(const Kernel& kernel);

}  // namespace jitc::inductor
