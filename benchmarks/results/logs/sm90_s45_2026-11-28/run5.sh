#!/usr/bin/env bash
# Session 45, device call 5 (asked for an H100): the final tree's new paths on the other card:
# the cache-op, sparse (fp8 cache included) and dense fp8 GPU tests, memcheck on a sparse fp8
# case, the sparse benchmark's quick rows with the fp8 cache, and the paged e4m3 line
# prefetch's A/B at page 1 (against the build without it, as run 3 on the H200).
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --error-exitcode 1"
K="test_wrapper_fp8_cache and fp16-128-4-2048"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_cache_ops.py tests/test_sparse.py tests/test_fp8_kv.py" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "timeout 120 python $B/bench_sparse.py --quick --fp8" \
  "timeout 120 python $B/check_sm90_dev.py --fp8 --ab-only --page 1 --ab-cases grid --variant=lib:.cache/variant/nolines/{dt}.so"
