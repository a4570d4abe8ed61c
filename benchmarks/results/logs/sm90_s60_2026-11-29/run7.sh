#!/usr/bin/env bash
# Session 60, device call 7 (one H200): the landed tree (c58cfd2, the register-widened tall
# instance). The whole GPU suite, racecheck and memcheck with MLA_WRAPPER_SM90_TALL=all on the
# small fp8 cases (a tall pair case among them), the tall plans against 64-row plans at every
# TP4 batch size (=all against =0; speedup < 1: tall faster; short contexts added to the set),
# and at page 1 this build against bd3d4fd's libraries (speedup < 1: this build faster).
B=benchmarks
unset MLA_WRAPPER_SM90_TALL
S="compute-sanitizer --error-exitcode 1"
C="python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases tp4"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "timeout 240 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "MLA_WRAPPER_SM90_TALL=all timeout 110 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "MLA_WRAPPER_SM90_TALL=all timeout 30 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "MLA_WRAPPER_SM90_TALL=all timeout 50 $C --page 64 --variant=env:MLA_WRAPPER_SM90_TALL=0" \
  "MLA_WRAPPER_SM90_TALL=all timeout 40 $C --page 1 --variant=lib:.cache/variant/s60b16/{dt}.so"
