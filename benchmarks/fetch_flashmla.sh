#!/usr/bin/env bash
# Puts FlashMLA's built library (its SM90 dense decode kernel, the peer of BENCHMARKS.md) in
# .whl/flashmla/ for the device tool's `carry`: FlashMLA has no wheel of its own, so this takes
# the copy that vLLM 0.24.0's wheel ships (vllm/_flashmla_C.abi3.so, 1.7 MB: built for torch
# 2.11 and CUDA 13, sm_90a), the torch and CUDA of the GPU machine. bench_decode.py and
# check_sm90_dev.py load it as the `flashmla` peer (harness.flashmla_ops) when it is there.
# Usage: bash benchmarks/fetch_flashmla.sh   (then carry .whl)
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 -d "$tmp" vllm==0.24.0
mkdir -p .whl/flashmla
unzip -o -j -q "$tmp"/vllm-0.24.0-*.whl vllm/_flashmla_C.abi3.so -d .whl/flashmla
ls -la .whl/flashmla
