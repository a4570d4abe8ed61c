#!/usr/bin/env bash
# Session 36, device call 4: the start reordered for a cold instruction cache (the plan's loads
# as each role's first instructions, FastDiv without the 64-bit division routine, the first
# page ids before the item's other work). Checks of this tree; A/B against the previous kernel
# (lib: built by build_commit_lib.sh from HEAD = fce27ba's kernel; "speedup" < 1: this tree is
# faster); CTA spans of this tree (run 2 has the previous kernel's).
B=benchmarks
O="--variant=lib:.cache/old_s35/{dt}.so --ab-only"
T=-DMLAW_SM90_TRACE=1
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --variant=lib:.cache/old_s35/{dt}.so --ab-cases paced" \
  "python $B/check_sm90_dev.py $O --ab-cases paced --flush clean" \
  "python $B/check_sm90_dev.py $O --ab-cases split" \
  "python $B/check_sm90_dev.py $O --ab-cases grid" \
  "python $B/check_sm90_dev.py $O --ab-cases compute" \
  "python $B/check_sm90_dev.py --variant='$T' --spans 16 16 4096 --cold --flush clean" \
  "python $B/check_sm90_dev.py --variant='$T' --spans 16 16 4096 --cold --flush dirty" \
  "python $B/check_sm90_dev.py --variant='$T' --spans 16 16 4096 --cold --flush clean --warm-code"
