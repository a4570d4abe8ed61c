#!/usr/bin/env bash
# Session 41, device call 4 (one GPU): the fp8 (e4m3) KV cache on sm90, first run: the 14
# checks over an fp8 cache with scales, the new GPU tests (tests/test_fp8_kv.py), memcheck on
# the small fp8 cases, the 16-bit checks (the producer's code changed around them), the grid
# against the bf16 kernel and fa3 (s41-h100-fp8), then the whole GPU suite.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 120 python $B/check_sm90_dev.py --fp8" \
  "timeout 150 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py -x" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 60 python $B/check_sm90_dev.py" \
  "timeout 120 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases middle,latency,compute,memory --tag s41-fp8" \
  "timeout 250 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests -x"
