#!/usr/bin/env bash
# Session 47, device call 10 (one GPU): with the prefetch off (the H200 default since run 8) the
# gather mode's scorer still spends ~294 clocks from its score GEMM to the max barrier (dense
# 209): the row-max vote in the gather mode (-DMLAW_SM90_GATHER_VOTE=1, the exact max kept per
# thread and reduced in the epilogue; a development build, vote2) A/B against the default on the
# sparse benchmark's 16-bit rows.
B=benchmarks
V=".cache/variant"
TAIL=${TAIL:-80} bash $B/device_run.sh \
  "timeout 300 python $B/bench_sparse.py --variant='lib:$V/vote2/{dt}.so'"
