// Values of the inner position (CpuSchedule::position_values; cpu/schedule.cpp says which): computed once
// per call, in the body's entry, into an array of the inner extent's length each, and loaded by the
// element loop at its position instead of computed again for every row.
#include "inductor/cpu/printer.h"

#include <fmt/format.h>

#include <algorithm>

namespace jitc::inductor::llvm_ir {

// The arrays, and a loop over the inner positions that fills them.
void Printer::fill_position_values() {
  const auto& values = schedule_.position_values;
  if (values.empty()) return;
  for (size_t a = 0; a < values.size(); ++a)
    line(fmt::format("%positions{} = alloca {}, i64 {}, align 64", a, compute_type(k_.body[values[a]].dtype), schedule_.positions));
  const std::string tag = fresh("pos").substr(1);
  const std::string at = open_loop(tag, "0", std::to_string(schedule_.positions));
  const std::vector<std::string> computed = emit_with(values, k_.inner_vars()[0], at);
  for (size_t a = 0; a < values.size(); ++a) {
    const char* type = compute_type(k_.body[values[a]].dtype);
    const std::string slot = fresh("pslot");
    line(fmt::format("{} = getelementptr {}, ptr %positions{}, i64 {}", slot, type, a, at));
    line(fmt::format("store {} {}, ptr {}", type, computed[a], slot));
  }
  close_loop(tag);
}

bool Printer::load_position_value(int i) {
  if (pass_ != kElementPass) return false;
  const auto& values = schedule_.position_values;
  const auto found = std::find(values.begin(), values.end(), i);
  if (found == values.end()) return false;
  const char* type = compute_type(k_.body[i].dtype);
  const std::string slot = fresh("pval");
  line(fmt::format("{} = getelementptr {}, ptr %positions{}, i64 {}", slot, type, found - values.begin(),
                   var_value_.at(k_.inner_vars()[0])));
  line(fmt::format("{} = load {}, ptr {}", name(i), type, slot));
  return true;
}

}  // namespace jitc::inductor::llvm_ir
