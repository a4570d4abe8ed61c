#!/usr/bin/env bash
# Session 56, device call 7 (one H200): the landed tree (2cc7cdd: every library's kernels
# 8345ad3's) through the whole GPU suite, then the 16-bit and fp8 checks.
B=benchmarks
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 420 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "timeout 60 python $B/check_sm90_dev.py" \
  "timeout 60 python $B/check_sm90_dev.py --fp8"
