#!/usr/bin/env bash
# Cold vs warm start through the disk cache, in separate processes: runs a program twice with a fresh
# JITC_CACHE_DIR (the first process compiles and fills the cache, the second loads from it) and prints
# what each reports. Usage: bash benchmarks/warm_start.sh [program [args...]]  (default: the quickstart)
set -euo pipefail
program=("${@:-./build/examples/quickstart}")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for run in cold warm; do
  start=$(date +%s.%N)
  output=$(JITC_CACHE_DIR="$dir" JITC_DISABLE_CACHE=0 "${program[@]}" 2>&1)
  end=$(date +%s.%N)
  echo "== $run: process wall $(echo "$end - $start" | bc) s"
  echo "$output" | grep -E "first|stats|compile|codegen|cache|kernels" || true
done
echo "cache: $(find "$dir" -name '*.jitc' | wc -l) entries, $(du -sh "$dir" | cut -f1)"
