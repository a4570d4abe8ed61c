#!/usr/bin/env bash
# Session 58, device call 3 (one H200): the landed tree (run 2's). The whole GPU suite, then
# compute-sanitizer memcheck and racecheck on the small fp8 cases (a tall-instance case among
# them: 69 requests at 32 heads) and memcheck on the small 16-bit ones.
B=benchmarks
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-8} bash $B/device_run.sh \
  "timeout 330 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "timeout 90 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 90 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 60 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small"
