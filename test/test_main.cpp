// Catch2's main for the test binaries. The suite runs under JITC_STRICT=1 (runtime/strict.h): a jitc bug
// that code generation would turn into an eager fallback with a warning fails the test instead. A
// value already in the environment wins (JITC_STRICT=0 shows what a user would see).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

int main(int argc, char* argv[]) {
  setenv("JITC_STRICT", "1", /*overwrite=*/0);
  return Catch::Session().run(argc, argv);
}
