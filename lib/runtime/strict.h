// The boundaries that turn a failure into an eager fallback with a warning (code generation, building an
// entry, checking sizes) keep the user's program running. Under JITC_STRICT=1 (the test suite runs so)
// they rethrow every failure that is not a limitation jitc reports by design, so that a bug fails a
// test instead of hiding in a warning. Limitations: UnsupportedError (a feature or op jitc does not
// compile, a graph it cannot functionalize), a lowering's Unsupported, and failures injected by
// JITC_INJECT_FAILURE_TESTING_ONLY (tests of the fallback itself).
#pragma once
#include <exception>

namespace jitc::runtime {

bool is_limitation(const std::exception& e);

// Called inside a catch block: rethrows the exception being handled under JITC_STRICT=1 unless it is a
// limitation.
void rethrow_if_strict(const std::exception& e);

}  // namespace jitc::runtime
