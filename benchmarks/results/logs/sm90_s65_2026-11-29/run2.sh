#!/usr/bin/env bash
# Session 65, device call 5 (one H200; calls 2-4 were the micro tests in benchmarks/micro):
# q1n (q1n.patch: q_to_f16's fast and slow paths share one pass of stores, and dequant_tile
# built -DMLAW_DEQUANT_INLINE=__noinline__, one subroutine instead of three inlined copies:
# the narrow instance's function 122.8 -> 107.6 KB, the plain Q-TMA e4m3 one 103 -> 88 KB)
# checked (NaN-poisoned outputs, fresh data, the reference) and timed against the landed
# library; nonly (run 1) again; cold spans of q1n's trace build (tr8q, with probe.patch).
B=benchmarks
C="python $B/check_sm90_dev.py"
V=.cache/variant
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 200 $C --fp8 --variant=lib:$V/q1n/{dt}.so" \
  "timeout 45 $C --ab-only --fp8 --ab-cases narrow --variant=lib:$V/q1n/{dt}.so" \
  "timeout 45 $C --ab-only --fp8 --ab-cases narrow --variant=lib:$V/nonly/{dt}.so" \
  "timeout 45 $C --spans 16 64 4096 --cold --fp8 --variant=lib:$V/tr8q/{dt}.so" \
  "timeout 45 $C --spans 128 64 4096 --cold --fp8 --variant=lib:$V/tr8q/{dt}.so" \
  "timeout 45 $C --ab-only --fp8 --ab-cases narrow --variant=lib:$V/q1n/{dt}.so" \
  "timeout 60 $C --ab-only --fp8 --ab-cases tp4 --variant=lib:$V/q1n/{dt}.so"
