// Kernel names that say what a kernel fuses: jitc_fused_<ops>_<n>, as profilers and logs show them.
#include "inductor/scheduler.h"

#include <algorithm>
#include <string>
#include <vector>

namespace jitc::inductor {

namespace {

// aten::_softmax.int reads as softmax.
std::string short_op_name(const std::string& op) {
  const size_t colons = op.find("::");
  std::string name = op.substr(colons == std::string::npos ? 0 : colons + 2);
  name = name.substr(0, name.find('.'));
  return name.substr(std::min(name.find_first_not_of('_'), name.size()));
}

}  // namespace

std::string fused_kernel_name(const std::string& prefix, const std::vector<std::string>& ops, size_t index) {
  constexpr size_t kMaxOps = 4;
  const std::string suffix = "_" + std::to_string(index);
  const size_t fixed = prefix.size() + suffix.size() + 1;  // the '_' before the ops
  const size_t room = fixed < kMaxKernelNameLength ? kMaxKernelNameLength - fixed : 0;
  std::vector<std::string> names;
  std::string joined;  // whole names that fit; a first name longer than the room is cut
  for (const auto& op : ops) {
    std::string name = short_op_name(op);
    if (name.empty() || std::find(names.begin(), names.end(), name) != names.end()) continue;
    if (names.size() == kMaxOps || (!joined.empty() && joined.size() + 1 + name.size() > room)) break;
    joined += (joined.empty() ? "" : "_") + name.substr(0, room);
    names.push_back(std::move(name));
  }
  return prefix + (joined.empty() ? "" : "_" + joined) + suffix;
}

}  // namespace jitc::inductor
