#!/usr/bin/env bash
# Session 56, device call 6 (one H200): the tall items again, their running maxima in shared
# memory (two buffers by tile parity) instead of the scorer's registers, only in the e4m3
# cache's wide instance (`tall8`; the 16-bit and narrow libraries unchanged). The fp8 checks of
# the variant, A/Bs against HEAD (a speedup above 1 means the variant is faster), its trace
# at H=32 B=64 L=4096 (`tall8t`).
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 120 $C --variant=lib:$V/tall8/{dt}.so" \
  "timeout 90 $C --ab-only --ab-cases h32 --variant=lib:$V/tall8/{dt}.so" \
  "timeout 60 $C --trace 32 64 4096 --variant=lib:$V/tall8t/{dt}.so"
