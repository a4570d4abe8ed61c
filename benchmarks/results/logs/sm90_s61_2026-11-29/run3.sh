#!/usr/bin/env bash
# Session 61, device call 3 (one H200): where tall plans lose at small batches (run 2: B=1-4
# 0.93-0.99x of 64-row plans, from CUDA graphs 0.91-0.95x). Per-tile traces (the trace build,
# -DMLAW_SM90_TRACE=1, built here) of fp8 H=32 decode, page 64, tall (=all) and 64-row (=0)
# plans, at B=1 L=1024 (16 one-tile items) and B=4 L=4096.
B=benchmarks
T="python $B/check_sm90_dev.py --fp8 --page 64 --variant=-DMLAW_SM90_TRACE=1 --trace 32"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "MLA_WRAPPER_SM90_TALL=all timeout 60 $T 1 1024" \
  "MLA_WRAPPER_SM90_TALL=0 timeout 60 $T 1 1024" \
  "MLA_WRAPPER_SM90_TALL=all timeout 60 $T 4 4096" \
  "MLA_WRAPPER_SM90_TALL=0 timeout 60 $T 4 4096"
