#!/usr/bin/env bash
# Build jitc on the GPU host and run its CUDA tests (and, with `bench`, the CUDA benchmarks).
#   run (device tool): bash benchmarks/gpu_check.sh [bench|bench-only|models]   with carry = ["gpu-deps"]
# Without an argument: the [cuda] tests of test_cuda and test_models (the model suite at small shapes).
# bench: the tests, then torch.compile on the CUDA workloads (peer_torch_compile.py --device cuda, modes
# default and reduce-overhead, $OUT/peer_cuda.json), then bench_cuda --peer (eager, jitc default and
# reduce-overhead, the torch.compile columns from the peer file; $OUT/cuda_bench.{json,log}).
# bench-only: the same without the tests.
# models <mode> [peer.json] [name,name]: the model suite (benchmarks/models) through jitc in bf16 on the GPU, mode default
# or reduce-overhead, with torch.compile's columns from peer.json; $OUT/models_jitc_<mode>.{json,log}. Make
# peer.json first (no build needed), in a call of its own (each takes minutes):
#   OUT=... /opt/torch/.venv/bin/python3 benchmarks/models/peer_models.py $OUT/models_peer_default.json \
#     --device cuda --dtype bf16 --mode default --rounds 20
# tests <spec>: test_cuda's cases matching a Catch2 spec ("[background],[cudagraphs]"), $OUT/test_cuda.log.
# training [peer.json] [name,name] [written]: the training tests ([cuda][training]) and bench_training in bf16 at the GPU
# scale (written: its --optimizer written, against a peer.json made with --optimizer compiled), with
# torch.compile's columns from peer.json, made first in a call of its own:
#   mkdir -p build-gpu && /opt/torch/.venv/bin/python3 benchmarks/models/peer_training.py build-gpu/peer_training.json --device cuda \
#     --dtype bf16 --scale gpu --rounds 10
# The host has LibTorch in /opt/torch/.venv and the CUDA toolkit, but no LLVM, fmt package or Catch2:
# the CPU JIT is switched off (JITC_WITH_LLVM=OFF) and Catch2 comes from gpu-deps/ (copied from Debian's
# catch2 package: include/catch2, lib/cmake/Catch2, lib/libCatch2WithMain.a; a fresh checkout makes it with
#   mkdir -p gpu-deps/include gpu-deps/lib/cmake && cp -r /usr/include/catch2 gpu-deps/include/ &&
#   cp -r /usr/lib/cmake/Catch2 gpu-deps/lib/cmake/ && cp /usr/lib/libCatch2WithMain.a gpu-deps/lib/
# ). Logs go to $OUT. Benchmarks run with a fresh JITC_CACHE_DIR and a fresh CUDA_CACHE_PATH: NVRTC 13 keeps
# the programs it compiled in the driver's compute cache, shared by every process on the host, so a second
# run (or an A/B's other side) would otherwise find most programs compiled and report shorter first calls.
set -uo pipefail
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
PY=/opt/torch/.venv/bin/python3
PREFIX=$($PY -c 'import torch; print(torch.utils.cmake_prefix_path)')
TORCH_LIB=$($PY -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export LD_LIBRARY_PATH="$TORCH_LIB:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
start=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJITC_WITH_LLVM=OFF \
  -DCMAKE_PREFIX_PATH="$PREFIX;$PWD/gpu-deps" > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
targets=(test_cuda bench_cuda test_models)
[ "${1:-}" = models ] && targets=(bench_models)
[ "${1:-}" = training ] && targets=(test_cuda bench_training)
[ "${1:-}" = tests ] && targets=(test_cuda)
cmake --build build-gpu -j16 --target "${targets[@]}" > "$OUT/build.log" 2>&1 || { grep -E "error|Error" -A3 "$OUT/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
status=0
if [ "${1:-}" = models ]; then
  mode=${2:-default}
  peer=()
  [ -n "${3:-}" ] && [ -s "$3" ] && peer=(--peer "$3")
  CUDA_CACHE_PATH=$(mktemp -d) JITC_CACHE_DIR=$(mktemp -d) timeout 400 ./build-gpu/benchmarks/bench_models "$OUT/models_jitc_$mode.json" --device cuda --dtype bf16 --mode $mode --rounds 20 ${peer[@]+"${peer[@]}"} ${4:+--only "$4"} > "$OUT/models_jitc_$mode.log" 2>&1
  echo "bench_models $mode: exit $? after $(( $(date +%s) - start )) s"
  grep -v "^|" "$OUT/models_jitc_$mode.log" | tail -5
  grep "^|" "$OUT/models_jitc_$mode.log"
  exit 0
fi
if [ "${1:-}" = tests ]; then
  ./build-gpu/test/test_cuda "${2:-[cuda]}" --durations yes > "$OUT/test_cuda.log" 2>&1
  status=$?
  grep -E "FAILED|with message|expansion" -A2 "$OUT/test_cuda.log" | head -60
  tail -3 "$OUT/test_cuda.log"
  exit $status
fi
if [ "${1:-}" = training ]; then
  ./build-gpu/test/test_cuda "[training]" > "$OUT/test_training_cuda.log" 2>&1
  status=$?
  grep -E "FAILED|with message|expansion" -A2 "$OUT/test_training_cuda.log" | head -40
  tail -3 "$OUT/test_training_cuda.log"
  peer=()
  [ -n "${2:-}" ] && [ -s "$2" ] && peer=(--peer "$2")
  CUDA_CACHE_PATH=$(mktemp -d) JITC_CACHE_DIR=$(mktemp -d) timeout 400 ./build-gpu/benchmarks/bench_training "$OUT/training_h100.json" --device cuda --dtype bf16 --scale gpu --rounds 10 ${peer[@]+"${peer[@]}"} ${3:+--only "$3"} ${4:+--optimizer "$4"} > "$OUT/training_h100.log" 2>&1
  echo "bench_training: exit $? after $(( $(date +%s) - start )) s"
  grep -v "^|" "$OUT/training_h100.log" | grep -v "^frame" | tail -8
  grep "^|" "$OUT/training_h100.log"
  exit $status
fi
if [ "${1:-}" != bench-only ]; then
  # [nvrtc] (every kernel variant through NVRTC) runs in CI; here only what needs the GPU.
  ./build-gpu/test/test_cuda "[cuda]" --durations yes > "$OUT/test_cuda.log" 2>&1
  status=$?
  grep -E "FAILED|with message|expansion|^  \"|passed|failed" -A1 "$OUT/test_cuda.log" | head -80
  tail -3 "$OUT/test_cuda.log"
  # The model suite at small shapes on the GPU: inference and training against eager.
  ./build-gpu/test/test_models "[cuda]" > "$OUT/test_models_cuda.log" 2>&1 || status=1
  grep -E "FAILED|with message|expansion" -A2 "$OUT/test_models_cuda.log" | head -40
  tail -3 "$OUT/test_models_cuda.log"
  # A device-side assert ends the CUDA context: its case runs in a process of its own.
  ./build-gpu/test/test_cuda "[cuda_assert]" > "$OUT/test_cuda_assert.log" 2>&1 || status=1
  tail -3 "$OUT/test_cuda_assert.log"
  echo "tests done: $(( $(date +%s) - start )) s"
fi
if [ "${1:-}" = bench ] || [ "${1:-}" = bench-only ]; then
  # torch.compile first (a cold Inductor cache: its first calls include compiling), then jitc with --peer.
  timeout 300 $PY benchmarks/peer_torch_compile.py --device cuda "$OUT/peer_cuda.json" > "$OUT/peer_cuda.log" 2>&1
  echo "peer_torch_compile.py: exit $? after $(( $(date +%s) - start )) s"
  grep -E "GB/s|^(ERROR|MISMATCH|NOTE)|Error|wrote" "$OUT/peer_cuda.log" | head -30
  peer=()
  [ -s "$OUT/peer_cuda.json" ] && peer=(--peer "$OUT/peer_cuda.json")
  # a fresh compile cache, so that jitc's first calls are cold like torch.compile's
  # compile_times: where each first call's time goes (trace, codegen, NVRTC, load), one line per graph
  JITC_LOGS=compile_times CUDA_CACHE_PATH=$(mktemp -d) JITC_CACHE_DIR=$(mktemp -d) timeout 240 ./build-gpu/benchmarks/bench_cuda "$OUT/cuda_bench.json" ${peer[@]+"${peer[@]}"} > "$OUT/cuda_bench.log" 2>&1
  echo "bench_cuda: exit $? after $(( $(date +%s) - start )) s"
  grep -vE "^(running|row) |compile_times" "$OUT/cuda_bench.log"  # row: each workload's raw numbers, kept if it crashes
  grep -o "compile times .*" "$OUT/cuda_bench.log" | head -40
fi
exit $status
