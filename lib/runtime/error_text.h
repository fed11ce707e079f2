// The text of an exception for a warning: c10::Error's what() ends in a C++ backtrace (one frame per
// line) that tells a user nothing about their program; its message alone is kept.
#pragma once
#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace jitc::runtime {

inline std::string error_text(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

}  // namespace jitc::runtime
