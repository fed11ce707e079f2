// Catch2's main for the test binaries. The suite runs under JITC_STRICT=1 (runtime/strict.h): a jitc bug
// that code generation would turn into an eager fallback with a warning fails the test instead, and with
// JITC_COMPILE_IN_BACKGROUND=0 and JITC_BUILD_AT_TRACE=0: a graph's first hit builds and runs its program,
// which most tests check, and a static entry replaced by a symbolic one (a size change) builds nothing, so
// that counts of compiled programs do not depend on timing (test_background_compile.cpp turns both on). A
// value already in the environment wins (JITC_STRICT=0 shows what a user would see).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

int main(int argc, char* argv[]) {
  setenv("JITC_STRICT", "1", /*overwrite=*/0);
  setenv("JITC_COMPILE_IN_BACKGROUND", "0", /*overwrite=*/0);
  setenv("JITC_BUILD_AT_TRACE", "0", /*overwrite=*/0);
  return Catch::Session().run(argc, argv);
}
