#!/usr/bin/env bash
# Session 42, device call 5 (one GPU): the shipped tree's full grid (sm90 and its fp8 cache,
# sm80, FlashInfer fa2 / fa3, FlashMLA) in one process, and the off-grid sweep beside fa3.
B=benchmarks
TAIL=${TAIL:-45} bash $B/device_run.sh \
  "timeout 280 python $B/bench_decode.py --backends sm90,sm90_fp8,sm80,fi_fa2,fi_fa3,flashmla --tag s42-full" \
  "timeout 200 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases sweep --tag s42-sweep"
