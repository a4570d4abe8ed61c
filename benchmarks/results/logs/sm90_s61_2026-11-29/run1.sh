#!/usr/bin/env bash
# Session 61, device call 1 (one H200): the landed tree of session 60 (d048604), whose last
# kernel change (d72e036: the tall instance's `empty` counts every consumer thread and every
# producer thread acquires) never ran on a device. The whole GPU suite, racecheck and memcheck
# with MLA_WRAPPER_SM90_TALL=all on the small fp8 cases, and the wgmma rate probe (built here:
# benchmarks/micro/wgmma_rates.cu -> .cache/bin/wgmma_rates).
B=benchmarks
unset MLA_WRAPPER_SM90_TALL
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 40 .cache/bin/wgmma_rates" \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "MLA_WRAPPER_SM90_TALL=all timeout 130 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "MLA_WRAPPER_SM90_TALL=all timeout 50 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8"
