#!/usr/bin/env bash
# Session 57, device call 1 (one H200): the tree at dee88ce (89526e5's produce() cleanup: one
# lone_busy flag for every instance's paced test and one widen_pending branch; dee88ce moves the
# code into per-role headers with identical SASS). The 16-bit and fp8 checks, then A/Bs against
# 5a03bc3's libraries (`s57base`: 16-bit, `s57base8`: e4m3); a speedup above 1 means 5a03bc3's
# library is faster.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --ab-only"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 70 python $B/check_sm90_dev.py" \
  "timeout 70 python $B/check_sm90_dev.py --fp8" \
  "timeout 90 $C --page 64 --ab-cases paced --variant=lib:$V/s57base/{dt}.so" \
  "timeout 90 $C --page 64 --ab-cases grid --variant=lib:$V/s57base/{dt}.so" \
  "timeout 90 $C --page 1 --ab-cases split --variant=lib:$V/s57base/{dt}.so" \
  "timeout 90 $C --fp8 --page 64 --ab-cases paced --variant=lib:$V/s57base8/{dt}.so" \
  "timeout 90 $C --fp8 --page 64 --ab-cases grid --variant=lib:$V/s57base8/{dt}.so"
