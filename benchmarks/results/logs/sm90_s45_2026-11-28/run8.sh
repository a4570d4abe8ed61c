#!/usr/bin/env bash
# Session 45, device call 8 (one GPU): after the review's refactors (one helper for run()'s fp8
# scales, the sparse reference taking the e4m3 cache and its scales): the sparse, cache-op and
# dense fp8 GPU tests, and the sparse benchmark's quick rows with the fp8 cache (its error now
# against the reference given the e4m3 cache).
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 120 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py tests/test_cache_ops.py tests/test_fp8_kv.py" \
  "timeout 60 python $B/bench_sparse.py --quick --fp8"
