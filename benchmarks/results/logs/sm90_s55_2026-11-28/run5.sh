#!/usr/bin/env bash
# Session 55, device call 5 (one H200): the narrow instance's TMA tiles prefetched into L2 two
# (`ahead2`) or three (`ahead3`) tiles before their issue (-DMLAW_SM90_NARROW_AHEAD=2 / 3; the
# jit cache: 0, SASS-identical to e62439b's), against the jit build: a speedup above 1 means
# the variant is faster.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "timeout 60 $C --small --variant=lib:$V/ahead2/{dt}.so --ab-cases split" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/ahead2/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/ahead3/{dt}.so" \
  "timeout 150 $C --ab-only --page 16 --ab-cases memory --variant=lib:$V/ahead2/{dt}.so" \
  "timeout 200 $C --ab-only --page 64 --ab-cases short --variant=lib:$V/ahead2/{dt}.so"
