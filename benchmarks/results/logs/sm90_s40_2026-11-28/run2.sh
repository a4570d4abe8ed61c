#!/usr/bin/env bash
# Session 40, device call 2: the prefetch condition without its redundant `!last` (SASS 8
# instructions shorter): checks, A/B against the build of run 1 (.cache/jit/ab_old/bf16.so,
# speedup > 1: run 1's build faster) on the items and compute rows, then the full grid with every
# peer (sm80, fa2, fa3, FlashMLA) in one process.
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$dev" in *H200*) tag=s40-h200-full ;; *) tag=s40-h100-full ;; esac
C="python $B/check_sm90_dev.py --ab-only --variant=lib:.cache/jit/ab_old/{dt}.so"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "$C --ab-cases items" "$C --ab-cases compute" \
  "python $B/bench_decode.py --backends sm90,sm80,fi_fa2,fi_fa3,flashmla --tag $tag"
