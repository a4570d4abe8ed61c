#!/usr/bin/env bash
# Session 42, device call 8 (one GPU): the shipped tree with the e4m3 L2 prefetch on by default
# (MLAW_SM90_E4M3_PREFETCH=1; the 16-bit kernels' SASS unchanged): fp8 tests, checks, memcheck
# on the small fp8 cases, the grid rows and the sweep beside fa3.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 120 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 60 python $B/check_sm90_dev.py --fp8" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 150 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases middle,latency,compute,memory --tag s42-pf" \
  "timeout 150 python $B/bench_decode.py --backends sm90_fp8,fi_fa3 --cases sweep --tag s42-pf-sweep"
