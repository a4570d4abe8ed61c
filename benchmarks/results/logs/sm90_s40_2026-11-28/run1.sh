#!/usr/bin/env bash
# Session 40, device call 1: the final tree of session 39 (eea2a3b: the next item's Q prefetched
# into L2 where items have >= 32 tiles) had not run the GPU suite or the sanitizers. The 14
# checks, memcheck / racecheck on the small cases, memcheck on the many-items tests (their new
# long cases run the prefetch), the GPU suite, the grid against fa3 and FlashMLA.
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$dev" in *H200*) tag=s40-h200-final ;; *) tag=s40-h100-final ;; esac
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 300 compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "$S --tool memcheck python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -x -k 'many_items and bf16'" \
  "timeout 280 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases middle,latency,compute,memory --tag $tag"
