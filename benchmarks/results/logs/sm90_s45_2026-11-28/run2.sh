#!/usr/bin/env bash
# Session 45, device call 2 (one GPU): the fp8 cache ops (gather_and_maybe_dequant_cache "fp8",
# cp_gather_and_upconvert_fp8_kv_cache) and the sparse wrapper over an e4m3 cache (the sm90
# gather mode with KvE4m3): their GPU tests with the rest of the sparse file, memcheck and
# racecheck on a small sparse fp8 case, memcheck on the cache-op tests, the sparse benchmark with
# the fp8 rows.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --error-exitcode 1"
K="test_wrapper_fp8_cache and bf16-16-1-2048"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_cache_ops.py tests/test_sparse.py" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_cache_ops.py -k 'dequant or upconvert'" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "$S --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "timeout 240 python $B/bench_sparse.py --fp8"
