#!/usr/bin/env bash
# Session 42, device call 6 (one GPU): the shipped tree's GPU suite (with the NaN-code test),
# the 14 checks and memcheck on the small 16-bit cases.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 60 python $B/check_sm90_dev.py" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "timeout 330 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
