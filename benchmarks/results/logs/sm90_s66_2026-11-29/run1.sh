#!/usr/bin/env bash
# Session 66, device call 1 (one H200): the landed tree (4a5aec5: session 65's combine grid sized
# for max(kRows, 64) rows, and the fp8 CUDA-graph re-plan tests refactored onto one helper), whose
# whole GPU suite had not run since those two changes: the suite, then racecheck and memcheck on
# the small fp8 cases (narrow and tall plans among them) and memcheck on the small 16-bit cases.
B=benchmarks
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 420 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "timeout 130 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 50 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 50 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small"
