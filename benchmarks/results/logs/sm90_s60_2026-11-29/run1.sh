#!/usr/bin/env bash
# Session 60, device call 1 (one H200): the landed tree of session 59 (0c15816). The whole GPU
# suite (session 59 ran it before its last epilogue change), racecheck and memcheck with
# MLA_WRAPPER_SM90_TALL=all on the small fp8 cases (a tall pair case among them), and the TP4
# A/B at page 16 (tall plans against 64-row plans; below 1 = tall faster).
B=benchmarks
unset MLA_WRAPPER_SM90_TALL
S="compute-sanitizer --error-exitcode 1"
C="python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases tp4 --variant=env:MLA_WRAPPER_SM90_TALL=0"
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "MLA_WRAPPER_SM90_TALL=all timeout 130 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "MLA_WRAPPER_SM90_TALL=all timeout 60 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "MLA_WRAPPER_SM90_TALL=all timeout 50 $C --page 16"
