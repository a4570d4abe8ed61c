#!/usr/bin/env bash
# Session 46, device call 8 (one GPU): flash_mla_sparse_fwd straight over FlashMLA's fp8 rows
# (and one attn_sink helper for both FlashMLA entry points; kernels unchanged since run 5): the
# sparse GPU tests, memcheck and racecheck on the new prefill case.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
K="test_flash_mla_sparse_fwd_ds_mla and 16-37-300"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "$S --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'"
