#!/usr/bin/env bash
# Session 55, device call 3 (one H200): the landed build (e62439b, the narrow tile's vote): the
# fp8 grid with our bf16 path and FlashInfer fa3 in one process (tag s55-h200-fp8; FlashInfer
# JIT-compiles its fa3 kernels first, its workspace comes back in fiws.tar).
B=benchmarks
TAIL=${TAIL:-50} bash $B/device_run.sh \
  "timeout 560 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --tag s55-h200-fp8"
