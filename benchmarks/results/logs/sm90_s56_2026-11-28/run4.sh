#!/usr/bin/env bash
# Session 56, device call 4 (one H200): -DMLAW_SM90_TALL=1 (items of <= 32 rows score their
# tile transposed: S^T = K Q^T as m64n32, half the score GEMM; `tall16` the 16-bit libraries,
# `tall8` the e4m3 ones; ptxas spills 40-100 bytes in them). The checks of the variants
# (NaN-poisoned, against the reference), then A/Bs against HEAD's libraries (a speedup above 1
# means the variant is faster).
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "timeout 120 $C --variant=lib:$V/tall16/{dt}.so" \
  "timeout 120 $C --fp8 --variant=lib:$V/tall8/{dt}.so" \
  "timeout 90 $C --ab-only --ab-cases h32 --variant=lib:$V/tall16/{dt}.so" \
  "timeout 90 $C --ab-only --ab-cases h32 --fp8 --variant=lib:$V/tall8/{dt}.so" \
  "timeout 90 $C --ab-only --ab-cases h64mtp --fp8 --variant=lib:$V/tall8/{dt}.so" \
  "timeout 90 $C --ab-only --ab-cases memory --variant=lib:$V/tall16/{dt}.so" \
  "timeout 90 $C --ab-only --ab-cases h64mtp --variant=lib:$V/tall16/{dt}.so"
