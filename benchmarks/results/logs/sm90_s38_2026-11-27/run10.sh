#!/usr/bin/env bash
# Session 38, device call 10: the final tree (early Q, few-merges combine up to 16 merges):
# A/B against -DMLAW_SM90_EARLY_Q=0 (speedup > 1: without early Q faster) on CTAs of several
# items and the compute rows, the checks, memcheck / racecheck on the small cases and memcheck
# of the many-items test.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --variant=-DMLAW_SM90_EARLY_Q=0"
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 300 compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "$C --ab-cases items" "$C --ab-cases compute" \
  "python $B/check_sm90_dev.py" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_wrapper.py -x -k 'many_items and bf16'"
