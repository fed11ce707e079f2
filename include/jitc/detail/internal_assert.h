// JITC_INTERNAL_ASSERT(condition, message): an invariant of jitc's own code. A failure is a jitc bug: it
// throws jitc::InternalError naming the file, the line, the condition and the message. Code generation
// turns it into an eager fallback with a warning, except under JITC_STRICT=1 (the test suite's mode),
// where it reaches the caller.
#pragma once
#include <jitc/errors.h>

#include <string>

namespace jitc::detail {

[[noreturn]] inline void internal_assert_failed(const char* file, int line, const char* condition, const std::string& message) {
  throw InternalError(std::string("jitc internal error at ") + file + ":" + std::to_string(line) + ": " + condition +
                      (message.empty() ? std::string() : " (" + message + ")") + "; this is a jitc bug, please report it");
}

}  // namespace jitc::detail

// A place jitc's own code never reaches (a switch over every case it produces).
#define JITC_INTERNAL_UNREACHABLE(message) ::jitc::detail::internal_assert_failed(__FILE__, __LINE__, "unreachable", message)

#define JITC_INTERNAL_ASSERT(condition, message)                                                       \
  do {                                                                                                 \
    if (!(condition)) ::jitc::detail::internal_assert_failed(__FILE__, __LINE__, #condition, message); \
  } while (false)
