#!/usr/bin/env bash
# Session 48, device call 8 (one H200): the final tree (fp8_ds_mla raw rows with swapped halves
# for odd tokens; bf16 library's SASS as run 7's candidate, fp16 new): the sparse GPU tests,
# memcheck and racecheck on small fp8_ds_mla cases (both query types), the quick sparse benchmark.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
K="test_wrapper_ds_mla and (bf16-16-1-2048 or bf16-64-32-256 or fp16-32-7-4097)"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 400 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py tests/test_cache_ops.py" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "$S --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "timeout 200 python $B/bench_sparse.py --quick --ds-mla"
