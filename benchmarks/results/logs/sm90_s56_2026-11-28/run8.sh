#!/usr/bin/env bash
# Session 56, device call 8 (one H200): the e4m3 tiles' L2 prefetch (TMA boxes and cp.async
# lines) off for every tile (`pf0w`) against HEAD, on the wide instance's rows (H=32, 64, 128;
# the wide instance's tiles are ready ~500-1200 clocks before the scorer asks for them, session
# 55 run 4). A speedup above 1 means the variant is faster.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8 --ab-only"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "timeout 60 $C --ab-cases h32 --variant=lib:$V/pf0w/{dt}.so" \
  "timeout 40 $C --ab-cases h128 --variant=lib:$V/pf0w/{dt}.so" \
  "timeout 40 $C --page 1 --ab-cases h128 --variant=lib:$V/pf0w/{dt}.so"
