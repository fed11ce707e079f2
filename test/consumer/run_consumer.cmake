# ctest: installs the built jitc into a fresh prefix, then configures, builds and runs examples/consumer
# against it through find_package(jitc), as a project outside this tree would. Fails if any step fails.
# Inputs (-D): JITC_BUILD_DIR, CONSUMER_SOURCE_DIR, WORK_DIR, GENERATOR, CXX_COMPILER, BUILD_TYPE,
# TORCH_DIR, PREFIX_PATH (the top-level build's CMAKE_PREFIX_PATH, ':' between entries), LAUNCHER (ccache, or empty),
# CUDA_ARCH_LIST (TORCH_CUDA_ARCH_LIST).
cmake_minimum_required(VERSION 3.25)

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer test: ${what} failed (${rc})")
  endif()
endfunction()

# A stale install or configuration would hide a package that no longer works: start from nothing.
set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")

step("cmake --install" "${CMAKE_COMMAND}" --install "${JITC_BUILD_DIR}" --prefix "${prefix}")
# The consumer sees jitc's prefix and the LibTorch that jitc was built with, as its user would pass them.
# The prefixes go through the environment (CMake reads CMAKE_PREFIX_PATH from it too): a ';' list would
# be split into separate arguments below.
set(ENV{CMAKE_PREFIX_PATH} "${prefix}:${PREFIX_PATH}")
set(configure "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE_DIR}" -B "${build}" -G "${GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
if(TORCH_DIR)
  list(APPEND configure "-DTorch_DIR=${TORCH_DIR}")
endif()
if(CUDA_ARCH_LIST)
  list(APPEND configure "-DTORCH_CUDA_ARCH_LIST=${CUDA_ARCH_LIST}")
endif()
if(LAUNCHER)
  list(APPEND configure "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
endif()
step("configuring examples/consumer" ${configure})
step("building examples/consumer" "${CMAKE_COMMAND}" --build "${build}")
step("running the consumer" "${build}/consumer")
