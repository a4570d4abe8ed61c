#!/usr/bin/env bash
# Session 56, device call 2 (one H200): the wide e4m3 instance's tiles read by the producer
# straight from global memory into registers and widened from there (-DMLAW_SM90_E4M3_LDG=1;
# no e4m3 landing in shared memory), with 8 (`ldgw8`) or 4 (`ldgw4`) 16-byte loads of a thread
# in flight. The fp8 checks of the variant (NaN-poisoned, against the reference), then A/Bs
# against HEAD's library (a speedup above 1 means the variant is faster).
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "timeout 150 $C --variant=lib:$V/ldgw8/{dt}.so" \
  "timeout 90 $C --ab-only --page 64 --ab-cases h128 --variant=lib:$V/ldgw8/{dt}.so" \
  "timeout 90 $C --ab-only --page 64 --ab-cases h32 --variant=lib:$V/ldgw8/{dt}.so" \
  "timeout 90 $C --ab-only --page 1 --ab-cases h128 --variant=lib:$V/ldgw8/{dt}.so" \
  "timeout 90 $C --ab-only --page 64 --ab-cases h128 --variant=lib:$V/ldgw4/{dt}.so" \
  "timeout 90 $C --ab-only --page 64 --ab-cases h32 --variant=lib:$V/ldgw4/{dt}.so"
