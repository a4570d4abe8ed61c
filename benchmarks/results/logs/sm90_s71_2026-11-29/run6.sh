#!/usr/bin/env bash
# Session 71, device call 6 (one H200): run 5 found the row's first backend 2-5% faster on the
# compute rows (sm90 first against last). Is it the power controller after the row's setup
# (a short idle)? The same rows and orders with 500 ms of do_bench warm-up before each
# backend's timed calls (bench_decode.py --warmup-ms 500).
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
B=benchmarks
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 150 python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases compute,memory --heat-s 10 --warmup-ms 500 --tag s71-h200-order-sm90-first-w500" \
  "timeout 150 python $B/bench_decode.py --backends flashmla,fi_fa3,sm90 --cases compute,memory --heat-s 10 --warmup-ms 500 --tag s71-h200-order-sm90-last-w500"
