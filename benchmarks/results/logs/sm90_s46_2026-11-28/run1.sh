#!/usr/bin/env bash
# Session 46, device call 1 (one GPU): the sparse wrapper over FlashMLA's fp8 rows
# (kv_data_type "fp8_ds_mla", the sm90 gather mode with KvDsMla): its GPU tests with the other
# fp8 sparse tests and the cache-op tests, memcheck and racecheck on a small case, the sparse
# benchmark's quick rows with the fp8_ds_mla rows next to FlashMLA's sparse fp8 decode kernel.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --error-exitcode 1"
K="test_wrapper_ds_mla and bf16-16-1-2048"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py tests/test_cache_ops.py -k 'ds_mla or fp8 or upconvert'" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "$S --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "timeout 200 python $B/bench_sparse.py --quick --ds-mla"
