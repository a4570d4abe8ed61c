#!/usr/bin/env bash
# Session 60, device call 7 (one H200): the landed tree (c58cfd2, the register-widened tall
# instance). The whole GPU suite, racecheck and memcheck with MLA_WRAPPER_SM90_TALL=all on the
# small fp8 cases (a tall pair case among them), the tall plans against 64-row plans at every
# TP4 batch size at pages 64 and 1 (=all against =0; speedup < 1: tall faster; short contexts
# added to the set). (Carried without the CUTLASS wheel: the tree's size limit; every library
# is prebuilt.)
B=benchmarks
unset MLA_WRAPPER_SM90_TALL
S="compute-sanitizer --error-exitcode 1"
C="python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases tp4"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "timeout 240 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "MLA_WRAPPER_SM90_TALL=all timeout 110 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "MLA_WRAPPER_SM90_TALL=all timeout 30 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "MLA_WRAPPER_SM90_TALL=all timeout 50 $C --page 64 --variant=env:MLA_WRAPPER_SM90_TALL=0" \
  "MLA_WRAPPER_SM90_TALL=all timeout 40 $C --page 1 --variant=env:MLA_WRAPPER_SM90_TALL=0"
