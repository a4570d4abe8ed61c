#!/usr/bin/env bash
# Session 61, device call 7 (one H200): the fp8 grid of the final tree with our bf16 path and
# FlashInfer fa3 in one process (tag s61-h200-fp8), and its four compute rows again
# (s61-h200-compute-rep).
B=benchmarks
TAIL=${TAIL:-60} bash $B/device_run.sh \
  "timeout 200 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --tag s61-h200-fp8" \
  "timeout 100 python $B/bench_decode.py --backends sm90,fi_fa3 --cases compute --tag s61-h200-compute-rep"
