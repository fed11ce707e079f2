// The kernels the scheduler builds (scheduler.cpp), and the builds of one scheduling run kept for its
// later attempts. A decision (store a value, run a node as an extern call) restarts the attempt from the
// graph's first node, and most kernels the next attempt builds are the ones this one built: the same
// members over the same space, every value the build read in the same state. A CNN's backward, whose
// layers differ in their sizes, takes a decision per layer (MobileNetV2's on the GPU: 27 attempts).
#pragma once
#include "inductor/kernel_builder.h"
#include "inductor/kernel_ir.h"
#include "inductor/kernel_space.h"
#include "inductor/lowering.h"

#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace jitc::inductor {

struct Built {
  Kernel kernel;
  std::vector<graph::ValueId> buffers;
  std::vector<graph::ValueId> inlined;
};
using BuildResult = std::variant<Built, BuildFailure>;

class KernelBuilds {
 public:
  // What identifies a build besides the state it read: its members and its space.
  static std::string key(const std::vector<graph::ValueId>& members, const Space& space);
  // An earlier build of `key` for the kernel group `group` that read every value in the state it has now,
  // or nullptr.
  const BuildResult* find(const std::string& key, const LoweringContext& ctx, int group) const;
  // Keeps the build just made, with the state of the values it read (LoweringContext::values_read).
  void keep(const std::string& key, const LoweringContext& ctx, int group, BuildResult result);

 private:
  struct Kept {
    std::vector<graph::ValueId> read;
    std::vector<uint8_t> states;  // per value read
    BuildResult result;
  };
  std::unordered_map<std::string, std::vector<Kept>> kept_;  // by members and space
};

// The index at which a member of these sizes is computed and stored in a kernel over `space` (its loop
// variables `outer` and `inner`): every var (element store), or the outer vars matched to its dims of size
// other than 1 (row store, once per row).
Index member_index(KernelBuilder& kb, const graph::SymShape& sizes, const Space& space, const std::vector<int>& outer,
                   const std::vector<int>& inner);

// Whether two builds made the same kernel (or failed alike): the check of a reused build under
// JITC_STRICT=1.
bool same_build(const BuildResult& a, const BuildResult& b);

}  // namespace jitc::inductor
