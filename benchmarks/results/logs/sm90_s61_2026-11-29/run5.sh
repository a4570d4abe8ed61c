#!/usr/bin/env bash
# Session 61, device call 5 (one H200): run 4's direct stores ran 1.01-1.05x slower than the
# landed libraries; its lse went out from lanes 0-3 of one warp, 8 rows each in a serial loop
# after the stores. Here each lane of that warp writes one row's lse. fp8 checks with
# MLA_WRAPPER_SM90_TALL=all, the TP4 A/B against the landed libraries (below 1: new faster) at
# pages 64 and 1, and the B=1 L=1024 trace.
B=benchmarks
A="python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases tp4 --variant=lib:.cache/variant/s61base/{dt}.so"
T="python $B/check_sm90_dev.py --fp8 --page 64 --variant=-DMLAW_SM90_TRACE=1 --trace 32"
export MLA_WRAPPER_SM90_TALL=all
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 60 python $B/check_sm90_dev.py --backend sm90 --fp8" \
  "timeout 60 $A --page 64" "timeout 60 $A --page 1" "timeout 40 $T 1 1024"
