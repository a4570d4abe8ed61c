#!/usr/bin/env bash
# Session 51, device call 8 (one H200): a probe of the narrow items' tiles widened by the two
# consumer warpgroups instead of the producer (consumer_widen.patch; the producer then only
# loads them, its refill no longer waits for the other tile's widening). Built as the variant
# `cw` (its producer spills 16 bytes: not shippable as is); the jit cache holds the shipped
# libraries, so an A/B "speedup" above 1 means the variant is faster. The 14 checks run on the
# variant.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 100 $C --page 64 --variant=lib:$V/cw/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/cw/{dt}.so" \
  "timeout 100 $C --ab-only --page 1 --ab-cases memory --variant=lib:$V/cw/{dt}.so" \
  "timeout 100 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/cw/{dt}.so"
