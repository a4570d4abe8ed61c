#!/usr/bin/env bash
# Session 60, device call 8 (one H200, warm, ~190 s of device time left): run 7 went without the
# CUTLASS wheel (the tree's size limit), and the JIT cache's key includes its include path, so
# nothing loaded. Racecheck and memcheck of the landed tree (c58cfd2's kernels) with
# MLA_WRAPPER_SM90_TALL=all on the small fp8 cases (only the fp8 libraries carried).
B=benchmarks
S="compute-sanitizer --error-exitcode 1"
export MLA_WRAPPER_SM90_TALL=all
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 110 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 25 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8"
