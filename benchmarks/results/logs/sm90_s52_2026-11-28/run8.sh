#!/usr/bin/env bash
# Session 52, device call 8 (one H200): the narrow tile's scores split as 4 token groups x 2
# column halves (-DMLAW_SM90_NARROW_PAIRS=1, variant `pairs`: the partial scores' exchange
# between pairs of warps, 8 KB a tile instead of 32; Q's fragments in 72 registers) against
# 03b5cca's library (the jit cache): a speedup above 1 means the variant is faster. The 14 fp8
# checks run on the variant first.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 150 $C --page 64 --variant=lib:$V/pairs/{dt}.so" \
  "timeout 150 $C --ab-only --page 1 --ab-cases memory --variant=lib:$V/pairs/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/pairs/{dt}.so"
