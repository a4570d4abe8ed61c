#!/usr/bin/env bash
# Session 57, device call 7 (one H200): -DMLAW_SM90_TALL2=1 (tall2.patch): items of <= 32 rows
# (not a cluster pair's half, no next item's Q landing) run their tiles transposed, S^T = K Q^T
# and O^T = V^T P^T as m64n32k16 (V^T read MN-major), O^T and the scorer's state in o's
# registers, the rows stored from O^T through the Q tile (their own epilogue). Libraries
# `tall8` (e4m3) and `tall16` (16-bit); the checks of each, then A/Bs (a speedup above 1 means
# the variant is faster).
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "timeout 100 $C --fp8 --variant=lib:$V/tall8/{dt}.so" \
  "timeout 100 $C --variant=lib:$V/tall16/{dt}.so" \
  "timeout 90 $C --fp8 --ab-only --page 64 --ab-cases h32 --variant=lib:$V/tall8/{dt}.so" \
  "timeout 60 $C --fp8 --ab-only --page 64 --ab-cases h64mtp --variant=lib:$V/tall8/{dt}.so" \
  "timeout 90 $C --ab-only --page 64 --ab-cases h32 --variant=lib:$V/tall16/{dt}.so" \
  "timeout 90 $C --fp8 --ab-only --page 1 --ab-cases h32 --variant=lib:$V/tall8/{dt}.so"
