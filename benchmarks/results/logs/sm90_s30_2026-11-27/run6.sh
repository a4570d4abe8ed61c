#!/usr/bin/env bash
# Session 30, device call 6 (H100): short items on a busy grid evict-first (kKvFirstShort)
# against the old H100 rule (only paced CTAs evict-first: -DMLAW_SM90_KV_FIRST_SHORT=0;
# "speedup" < 1: the new rule is faster) at pages 1 and 16 (at page 64 those CTAs are paced).
OLD="-DMLAW_SM90_KV_FIRST_SHORT=0"
B=benchmarks
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases memory --page 1 --variant='$OLD'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases memory --page 16 --variant='$OLD'"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
