#!/usr/bin/env bash
# Session 66, device call 7 (one H200): the final tree (5e30cd3; device code as run 1's, the
# benchmark harness changed): racecheck on the small 16-bit cases (run 1 had it on the fp8 ones),
# and the wrapper's GPU tests (they import the harness).
B=benchmarks
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 150 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py"
