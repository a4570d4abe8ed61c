#!/usr/bin/env bash
# Session 44, device call 8 (an H100): the final kernels (run 7's) beside FlashInfer fa3: the
# grid rows with the 16-bit and the fp8 cache (the H100's fp8 figures were session 41's), the
# fp8 sweep.
B=benchmarks
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 150 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases middle,latency,compute,memory --tag s44-h100" \
  "timeout 100 python $B/bench_decode.py --backends sm90_fp8,fi_fa3 --cases sweep --tag s44-h100-sweep"
