#!/usr/bin/env bash
# Session 55, device call 8 (one H200): HEAD's build (e62439b's kernels) against the same
# library without the e4m3 tiles' L2 prefetch before the stage wait (`pf0`,
# -DMLAW_SM90_E4M3_PREFETCH=0; run 5 found more prefetch slower for the narrow tiles) and without
# the cp.async tiles' line prefetch (`pfl0`, -DMLAW_SM90_E4M3_PREFETCH_LINES=0, page 1); a
# speedup above 1 means the variant is faster.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8 --ab-only"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "timeout 60 $C --page 64 --ab-cases memory --variant=lib:$V/pf0/{dt}.so" \
  "timeout 60 $C --page 64 --ab-cases split --variant=lib:$V/pf0/{dt}.so" \
  "timeout 60 $C --page 1 --ab-cases memory --variant=lib:$V/pfl0/{dt}.so"
