#!/usr/bin/env bash
# Session 37, device call 14: the review commit (launch_combine picks its instance once, the
# test's wrappers built once, check_sm90_dev's planned-wrapper helper; device code unchanged):
# the checks, the GPU tests of the wrapper (the previous-run / capacity cases among them) and
# a --spans --warm-code smoke run of the trace build.
B=benchmarks
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "timeout 240 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py" \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_TRACE=1 --spans 16 16 4096 --cold --flush clean --warm-code"
