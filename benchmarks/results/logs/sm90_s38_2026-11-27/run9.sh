#!/usr/bin/env bash
# Session 38, device call 9: with early Q, the staged rows of an item go out as bulk copies
# issued by warpgroup 1 (MLAW_SM90_BULK_STORE) instead of the consumers' 16-byte stores.
# Checks, tests (wrapper subsets, sparse), memcheck of the many-items test, then A/B against
# -DMLAW_SM90_BULK_STORE=0 (run 8's kernel; speedup > 1 means it is faster).
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --variant=-DMLAW_SM90_BULK_STORE=0"
K="many_items or many_merge or small_batch or test_grid or skewed or graph or mixed or odd_head"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -x -k '$K'" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py -x" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 python -m pytest -q -p no:cacheprovider -m gpu tests/test_wrapper.py -x -k 'many_items and bf16'" \
  "$C --ab-cases items" "$C --ab-cases compute"
