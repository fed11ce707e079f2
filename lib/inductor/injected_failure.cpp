#include "inductor/injected_failure.h"

#include "runtime/env.h"

namespace jitc::inductor {

bool failure_injected(std::string_view stage, const std::vector<std::string>& ops) {
  const std::string value = runtime::env_string("JITC_INJECT_FAILURE_TESTING_ONLY");
  if (value.empty()) return false;
  const std::string_view spec(value);
  const size_t colon = spec.find(':');
  if (colon == std::string_view::npos || spec.substr(0, colon) != stage) return false;
  const std::string_view op = spec.substr(colon + 1);
  for (const std::string& name : ops)
    if (name == op || (name.size() > op.size() && name.compare(0, op.size(), op) == 0 && name[op.size()] == '.')) return true;
  return false;
}

bool failure_injection_configured() {
  const std::string value = runtime::env_string("JITC_INJECT_FAILURE_TESTING_ONLY");
  return !value.empty() && value.rfind("bug:", 0) != 0;
}

}  // namespace jitc::inductor
