#!/usr/bin/env bash
# Session 41, device call 6 (one GPU): the shipped tree (the fp8 cache's producer at 72 / 216
# registers, no spills in either instance): the 16-bit checks, memcheck / racecheck on the
# small 16-bit and fp8 cases, the grid with sm90 / sm90_fp8 / fa3 (s41-fp8c), the GPU suite.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 python $B/check_sm90_dev.py" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "timeout 120 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases middle,latency,compute,memory --tag s41-fp8c" \
  "timeout 320 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
