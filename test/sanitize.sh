#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (not part of CI: a full
# instrumented build takes a long time on 2 cores). jitc and its tests are instrumented; LibTorch is not,
# so reports are about jitc's own code (and what it passes to LibTorch).
#   bash test/sanitize.sh [ctest arguments...]     e.g. bash test/sanitize.sh -R test_inductor
# Build directory: build-sanitize. Any sanitizer report fails the run (halt_on_error for UBSan too).
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup
flags="-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer -g -O1"
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
cmake --build build-sanitize -j2
# LibTorch allocates memory it never frees on purpose (registries): leak checking is off. Generated code
# (ORC) is not instrumented. ASan needs to come first in the process: the test binaries link it.
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0:detect_odr_violation=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# consumer_find_package builds a project of its own outside this build (not instrumented): an
# instrumented libjitc cannot load there ("ASan runtime does not come first"), so it is left out.
ctest --test-dir build-sanitize --output-on-failure -j2 -E consumer_find_package "$@"
