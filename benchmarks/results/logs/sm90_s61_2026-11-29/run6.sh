#!/usr/bin/env bash
# Session 61, device call 6 (one H200): the final tree (972598f's kernels: the tall epilogue
# stored from registers; the CUDA-graph tall rule). The whole GPU suite (the sm80 libraries
# build here: the carried tree's size limit), racecheck and memcheck with
# MLA_WRAPPER_SM90_TALL=all on the small fp8 cases.
B=benchmarks
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 420 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "MLA_WRAPPER_SM90_TALL=all timeout 130 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "MLA_WRAPPER_SM90_TALL=all timeout 50 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8"
