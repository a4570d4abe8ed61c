#!/usr/bin/env bash
# Session 65, device call 8 (one H200): where the narrow plans lose at H=16 B=32 L=2048 (0.98x
# in runs 3-4): kernel times inside CUDA-graph replays (--timeline: attention and combine, next
# to fa3) with the 64-row plans and with the narrow plans, twice each.
B=benchmarks
T="timeout 60 python $B/check_sm90_dev.py --timeline 16 32 2048 --fp8"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "MLA_WRAPPER_SM90_NARROW_PLANS=0 $T" "MLA_WRAPPER_SM90_NARROW_PLANS=1 $T" \
  "MLA_WRAPPER_SM90_NARROW_PLANS=0 $T" "MLA_WRAPPER_SM90_NARROW_PLANS=1 $T"
