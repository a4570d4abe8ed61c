#!/usr/bin/env bash
# Session 31, device call 7 (H200): run 6 ran MTP rows past one row tile at 32 / 64 heads
# 0.92-1.05x the old rule. Variant: those items keep evict-first (-DMLAW_SM90_KV_NORMAL_ONE_TILE=1:
# every request of more than 64 rows; the shipped flag is MLAW_SM90_KV_FIRST_MULTI_TILE, for
# requests of two or more whole row tiles); "speedup" > 1: the variant is faster); the checks of the variant build.
V="-DMLAW_SM90_KV_NORMAL_ONE_TILE=1"
B=benchmarks
TAIL=${TAIL:-10} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --ab-cases h64mtp --variant='$V'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases h64mtp --variant='$V'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases h64mtp --flush clean --variant='$V'"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
