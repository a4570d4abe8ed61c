#!/usr/bin/env bash
# Session 67, device call 2 (one H200): the mma.sync micro again with the kernel's addressing
# (one moving base a loop, constant offsets: run 1's P V path paid two address instructions a
# read), then `--power --fp8` (new): our bf16 path, our e4m3 path and FlashInfer fa3 back to
# back for 4 s each while nvidia-smi samples clock, power and throttle reasons, on an fp8
# memory row (the narrow plans) and an fp8 compute row. FlashInfer's wheels come from
# .cache/whlfi, its JIT cache from .cache/fiws (both carried).
B=benchmarks
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
P="timeout 150 python $B/check_sm90_dev.py --fp8 --tag s67-h200-power-fp8 --power"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a $B/micro/mma_sync_rates.cu -o /tmp/mma_rates && /tmp/mma_rates" \
  "$P 16 128 16384" "$P 16 64 4096" "$P 128 64 4096"
