#!/usr/bin/env bash
# Session 42, device call 7 (one GPU): an e4m3 tile's TMA boxes prefetched into L2 before the
# previous tile's widening (-DMLAW_SM90_E4M3_PREFETCH=1, .cache/jit/ab_pf): the load after the
# stage frees then comes from L2 (run 2: issue -> bytes in 1625 clocks, on the stage's cycle).
# fp8 checks of the variant, A/B on the grid and compute cases, a trace of the variant.
B=benchmarks
C="python $B/check_sm90_dev.py"
V="--variant=lib:.cache/jit/ab_pf/{dt}.so"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 150 $C --fp8 $V --ab-cases grid" \
  "timeout 120 $C --fp8 --ab-only $V --ab-cases compute" \
  "timeout 60 $C --fp8 --trace 128 128 4096 --variant=lib:.cache/jit/tr_pf/{dt}.so"
