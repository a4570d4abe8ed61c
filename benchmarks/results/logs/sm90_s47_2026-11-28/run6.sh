#!/usr/bin/env bash
# Session 47, device call 6 (one GPU): run 5's traces put the gather mode's tile at ~3900 clocks
# against the dense kernel's ~3500, ~470 of it between the scorer's score GEMM and the max
# barrier (676 against 209). The sparse benchmark's 16-bit rows, A/B of session 46's build
# (s46_sparse; this tree's default moved the L2 prefetch into a lambda), the row-max vote in the
# gather mode (MLAW_SM90_GATHER_VOTE=1: the exact max per thread, reduced in the epilogue), the
# L2 prefetch by the P V warpgroup after the max barrier (MLAW_SM90_GATHER_PF_PV=1) and both; the
# trace of both.
B=benchmarks
V=".cache/variant"
TAIL=${TAIL:-400} bash $B/device_run.sh \
  "timeout 400 python $B/bench_sparse.py --variant='lib:$V/s46_sparse/{dt}.so;lib:$V/vote/{dt}.so;lib:$V/pfpv/{dt}.so;lib:$V/both/{dt}.so' --trace='lib:$V/trace_both/{dt}.so'"
