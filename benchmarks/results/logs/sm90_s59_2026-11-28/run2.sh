#!/usr/bin/env bash
# Session 59, device call 2 (one H200): the tree with the tall instance on by default (run 1's
# tall_item, racecheck clean there). The whole GPU suite, racecheck and memcheck on the small
# 16-bit and fp8 cases with default settings (the fp8 H=32 69-request case takes tall plans),
# and the 16-bit and fp8 checks.
B=benchmarks
unset MLA_WRAPPER_SM90_TALL
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 330 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "timeout 150 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 60 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 100 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "timeout 60 python $B/check_sm90_dev.py" \
  "timeout 60 python $B/check_sm90_dev.py --fp8"
