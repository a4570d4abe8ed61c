#!/usr/bin/env bash
# Session 30, device call 3 (H200): the KV stream evict-normal at <= 128 heads (16-token paced
# boxes kept) against the shipped evict-first on the memory and middle rows, after do_bench's
# flush and after a read flush (with the whole-tile maps now unpromoted at <= 16 heads).
NORMAL="-DMLAW_SM90_KV_NORMAL_MAX_HEADS=128 -DMLAW_SM90_PACED_ROWS8_MAX_BYTES=20 -DMLAW_SM90_PACED_ROWS=16"
B=benchmarks
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --ab-only --ab-cases memory --variant='$NORMAL'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases memory --flush clean --variant='$NORMAL'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases memory --variant='$NORMAL'"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
