#!/usr/bin/env bash
# Session 48, device call 5 (one H200): the full decode grid of the final kernels (the dense sm90
# SASS is session 45's) with every peer in one process (sm90, sm90_fp8, sm80, FlashInfer fa2 /
# fa3, FlashMLA), the fp8 sweep, and two compute rows sustained at the power cap (sm90, fa3,
# FlashMLA back to back, 4 s each).
B=benchmarks
TAIL=${TAIL:-80} bash $B/device_run.sh \
  "timeout 200 python $B/bench_decode.py --backends sm90,sm90_fp8,sm80,fi_fa2,fi_fa3,flashmla --tag s48-h200-full" \
  "timeout 90 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases sweep --tag s48-h200-sweep" \
  "timeout 120 python $B/check_sm90_dev.py --power 128 128 16384 --tag s48-h200-power" \
  "timeout 120 python $B/check_sm90_dev.py --power 128 64 4096 --tag s48-h200-power"
