#include "runtime/strict.h"

#include "inductor/injected_failure.h"
#include "inductor/lowering.h"
#include "runtime/env.h"

#include <jitc/errors.h>

namespace jitc::runtime {

bool is_limitation(const std::exception& e) {
  return dynamic_cast<const UnsupportedError*>(&e) || dynamic_cast<const inductor::Unsupported*>(&e) ||
         inductor::failure_injection_configured();
}

void rethrow_if_strict(const std::exception& e) {
  if (env_strict() && !is_limitation(e)) throw;
}

}  // namespace jitc::runtime
