#!/usr/bin/env bash
# Session 34 scratch: build, the [cuda] model tests, then torch.compile and jitc on the CNN rows in one mode.
set -uo pipefail
OUT=${OUT:-/tmp/gpu}
mkdir -p "$OUT"
PY=/opt/torch/.venv/bin/python3
PREFIX=$($PY -c 'import torch; print(torch.utils.cmake_prefix_path)')
TORCH_LIB=$($PY -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export LD_LIBRARY_PATH="$TORCH_LIB:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
start=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJITC_WITH_LLVM=OFF -DCMAKE_PREFIX_PATH="$PREFIX;$PWD/gpu-deps" > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
cmake --build build-gpu -j16 --target test_cuda test_models bench_models > "$OUT/build.log" 2>&1 || { grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
if [ -n "${TESTS:-}" ]; then
  ./build-gpu/test/test_cuda "*channels-last*" 2>&1 | tail -2
  ./build-gpu/test/test_models "[cuda]" > "$OUT/t2.log" 2>&1; grep -E "FAILED|with message|expansion" -A3 "$OUT/t2.log" | head -40; tail -2 "$OUT/t2.log"
  echo "tests: $(( $(date +%s) - start )) s"
fi
ROWS=${ROWS:-resnet18_b1,resnet18_b32,resnet50_b1,mobilenet_v2_b1,shufflenet_v2_b1,unet_b1}
for MODE in default reduce-overhead; do
cp benchmarks/models/peer_h100_cnn_${MODE}_s34.json $OUT/peer_$MODE.json

for lo in 1 0; do
  JITC_LAYOUT_OPTIMIZATION=$lo CUDA_CACHE_PATH=$(mktemp -d) JITC_CACHE_DIR=$(mktemp -d) timeout 200 ./build-gpu/benchmarks/bench_models "$OUT/models_${MODE}_lo$lo.json" --device cuda --dtype bf16 --mode $MODE --rounds 20 --only $ROWS --peer $OUT/peer_$MODE.json > "$OUT/models_${MODE}_lo$lo.log" 2>&1
  echo "== layout optimization $lo ($(( $(date +%s) - start )) s)"; grep "^|" "$OUT/models_${MODE}_lo$lo.log" | cut -d'|' -f1-8,10-11,13
done
done
