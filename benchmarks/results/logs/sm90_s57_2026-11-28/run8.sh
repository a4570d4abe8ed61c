#!/usr/bin/env bash
# Session 57, device call 8 (one H200): probe `tonly8` (-DMLAW_SM90_TALL2=1 -DTALL2_ONLY=1,
# e4m3 libraries): every item runs run 7's transposed tile, the 64-row path compiled out, 0
# bytes spilled. Wrong results for items of more than 32 rows and for cluster pairs' halves
# (timing only, --ab-only): what the transposed tile costs on the H=32 rows, apart from run 7's
# spills in the other paths. Above 1: the probe is faster.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8 --ab-only"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 90 $C --page 64 --ab-cases h32 --variant=lib:$V/tonly8/{dt}.so" \
  "timeout 90 $C --page 1 --ab-cases h32 --variant=lib:$V/tonly8/{dt}.so"
