#!/usr/bin/env bash
# Session 41, device call 9 (one GPU): the fp8 cache with early issue (thread 0 issues a tile's
# TMA boxes between the phases of the previous tile's widening once its stage is free; the
# 16-bit and sparse instances' SASS is identical to run 6's): fp8 checks and tests, memcheck /
# racecheck on the small fp8 cases, the grid with sm90 / sm90_fp8 / fa3 (s41-fp8d).
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 90 python $B/check_sm90_dev.py --fp8" \
  "timeout 120 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py -x" \
  "timeout 100 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases middle,latency,compute,memory --tag s41-fp8d" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8"
