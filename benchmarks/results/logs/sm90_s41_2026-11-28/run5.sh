#!/usr/bin/env bash
# Session 41, device call 5 (one GPU): the fp8 cache's second version (scales folded, fewer
# instructions a chunk, 128-byte e4m3 rows): the fp8 checks and tests, then the grid with sm90 /
# sm90_fp8 / fa3 (s41-fp8b) and the memory rows at page 16 and 1 (cp.async), B=128 L=4096.
B=benchmarks
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 120 python $B/check_sm90_dev.py --fp8" \
  "timeout 150 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py -x" \
  "timeout 120 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases middle,latency,compute,memory --tag s41-fp8b" \
  "timeout 150 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases sweep --tag s41-fp8b-sweep"
