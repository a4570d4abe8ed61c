#!/usr/bin/env bash
# Session 53, device call 3 (one H200): now that a narrow item's tiles are not widened, the
# narrow-item threshold at 2 / 4 tiles against 8 (variants min2, min4 against the jit cache: a
# speedup above 1 means the variant is faster); B=1's items (2-4 tiles) then take the narrow
# path too.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 150 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/min2/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/min4/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases short --variant=lib:$V/min2/{dt}.so" \
  "timeout 150 $C --ab-only --page 1 --ab-cases split --variant=lib:$V/min2/{dt}.so"
