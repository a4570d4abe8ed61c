#!/usr/bin/env bash
# Session 37, device call 11: the combine's grid cap and launch bounds from config.h constants
# (three CTAs an SM for the default instance, four for the many-merges one, two for the
# few-merges one) instead of an occupancy query at the first launch (which could fall inside a
# CUDA-graph capture); the grids are run 7's. Checks, the GPU suite, A/B against session 36.
B=benchmarks
O="--variant=lib:.cache/old_s36/{dt}.so --ab-only"
TAIL=${TAIL:-18} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "timeout 240 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "python $B/check_sm90_dev.py $O --ab-cases split --flush clean" \
  "python $B/check_sm90_dev.py $O --ab-cases short"
