#!/usr/bin/env bash
# Session 57, device call 5 (one H200): -DMLAW_SM90_QF16_ZERO_ROWS=1 (qzero.patch, e4m3
# libraries `qz8`): q_to_f16 writes zeros into the Q tile's rows past the item's valid rows
# (the wide e4m3 instance's items: <= 32 valid rows of 64 at TP4 / TP2), which the score GEMM
# reads as its A operand (stale bytes there before, masked). Session 28 saw the clock at the
# 700 W cap rise 5-8% with zeros there at H=16 (16-bit, load-bound, not kept); the fp8 TP4 rows
# are bound by the consumers' chain. The fp8 checks of the variant, then A/Bs (a speedup above 1
# means the variant is faster).
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "timeout 120 $C --variant=lib:$V/qz8/{dt}.so" \
  "timeout 120 $C --ab-only --page 64 --ab-cases h32 --variant=lib:$V/qz8/{dt}.so" \
  "timeout 120 $C --ab-only --page 64 --ab-cases h64mtp --variant=lib:$V/qz8/{dt}.so" \
  "timeout 90 $C --ab-only --page 1 --ab-cases h32 --variant=lib:$V/qz8/{dt}.so"
