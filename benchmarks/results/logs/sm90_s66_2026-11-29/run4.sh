#!/usr/bin/env bash
# Session 66, device call 4 (one H200): the A/B harness's position bias. Run 3's tp4 rows read
# the same as session 65's run 7 with the libraries' roles swapped (the slot, not the library,
# set B=16 and H=24 B=1), so: A/A sets (`same`: a copy of the JIT cache's e4m3 library as the
# `lib:` variant), interleaved with the own-rows combine grid (`ownrows`) against the landed
# max(kRows, 64) grid on the narrow set (16-row plans). Above 1: the variant slot ran faster.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --fp8"
S="--variant=lib:.cache/variant/same/{dt}.so"
O="--variant=lib:.cache/variant/ownrows/{dt}.so"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 80 $C --ab-cases narrow $S" "timeout 80 $C --ab-cases narrow $O" \
  "timeout 80 $C --ab-cases tp4 $S" \
  "timeout 80 $C --ab-cases narrow $O" "timeout 80 $C --ab-cases narrow $S"
