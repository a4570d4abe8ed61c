#!/usr/bin/env bash
# Session 52, device call 11 (one H200): the narrow path's item threshold (kNarrowMinTiles, 8
# since session 51) at 4 and 6 tiles (variants min4, min6) against the final libraries (the
# jit cache): a speedup above 1 means the variant is faster.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8 --ab-only"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 100 $C --page 64 --ab-cases split --variant=lib:$V/min4/{dt}.so" \
  "timeout 100 $C --page 64 --ab-cases split --variant=lib:$V/min6/{dt}.so" \
  "timeout 100 $C --page 1 --ab-cases split --variant=lib:$V/min4/{dt}.so" \
  "timeout 100 $C --page 64 --ab-cases memory --variant=lib:$V/min4/{dt}.so"
