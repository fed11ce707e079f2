// Catch2's main for the profiler tests: the process ends without running static destructors. Once in
// about thirty runs under load (the suite at -j2 on a host without CUDA), a process aborted with heap
// corruption after every test had passed, during exit, after LibTorch's profiler (kineto) had run; it did
// not recur in 24 runs alone. Not explained yet (issue 23's closing note): until it is, the profiler tests
// keep their verdict and skip the exit path.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

int main(int argc, char* argv[]) {
  setenv("JITC_STRICT", "1", /*overwrite=*/0);  // as test_main.cpp
  setenv("JITC_COMPILE_IN_BACKGROUND", "0", /*overwrite=*/0);  // as test_main.cpp
  setenv("JITC_BUILD_AT_TRACE", "0", /*overwrite=*/0);
  const int result = Catch::Session().run(argc, argv);
  std::fflush(nullptr);
  std::_Exit(result);
}
