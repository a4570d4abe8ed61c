#!/usr/bin/env bash
# Session 46, device call 11 (one GPU): the new tutorial (sparse decode over FlashMLA's fp8 rows,
# the wrapper and flash_mla_with_kvcache against the reference) and the sparse GPU tests on the
# final tree.
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 120 python tutorials/sparse_fp8_decode.py" \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py"
