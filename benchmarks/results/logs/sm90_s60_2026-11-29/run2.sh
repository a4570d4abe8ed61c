#!/usr/bin/env bash
# Session 60, device call 2 (one H200): where the tall instance's time goes. Per-tile traces
# (tall_item now records the 64-row loop's events: full wait 0/7, full 1/8, S done 2, barMax
# 3/10, P written 4, barP 5/12, P V done 6/13; epilogue staged 21, sums 20, pair exchange 23,
# stored 19) of fp8 H=32 decode with tall plans (=all) and with 64-row plans (=0), at B=128 /
# B=4 L=4096 and B=1 L=16384, page 64.
B=benchmarks
T="python $B/check_sm90_dev.py --fp8 --page 64 --variant=-DMLAW_SM90_TRACE=1 --trace 32"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "MLA_WRAPPER_SM90_TALL=all timeout 60 $T 128 4096" \
  "MLA_WRAPPER_SM90_TALL=0 timeout 60 $T 128 4096" \
  "MLA_WRAPPER_SM90_TALL=all timeout 60 $T 4 4096" \
  "MLA_WRAPPER_SM90_TALL=0 timeout 60 $T 4 4096" \
  "MLA_WRAPPER_SM90_TALL=all timeout 60 $T 1 16384" \
  "MLA_WRAPPER_SM90_TALL=0 timeout 60 $T 1 16384"
