#!/usr/bin/env bash
# Session 47, device call 8 (one GPU): the sparse kernel's L2 prefetch of tile i + 2's rows as a
# run-time switch (MlaSparseArgs.l2_prefetch_rows; sparse.gather_l2_prefetch: off for a 16-bit
# cache on an H200, on otherwise). The whole GPU suite (the sparse libraries' arguments grew),
# the sparse benchmark with the e4m3 and fp8_ds_mla rows (default: the 16-bit rows without the
# prefetch), the same 16-bit rows with MLA_WRAPPER_GATHER_L2_PREFETCH=1 (another process),
# memcheck / racecheck on small sparse cases.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
K="(test_wrapper_ds_mla and (bf16-16-1-2048 or bf16-64-32-256)) or (test_wrapper_fp8_cache and bf16-64-32-256) or (test_wrapper_gather_l2_prefetch_switch and 64)"
TAIL=${TAIL:-60} bash $B/device_run.sh \
  "timeout 500 python -m pytest -q -x -rfs -p no:cacheprovider -m gpu tests" \
  "timeout 300 python $B/bench_sparse.py --fp8 --ds-mla" \
  "MLA_WRAPPER_GATHER_L2_PREFETCH=1 timeout 300 python $B/bench_sparse.py" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "$S --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'"
