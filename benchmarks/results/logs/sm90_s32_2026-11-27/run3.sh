#!/usr/bin/env bash
# Session 32, device call 3 (H100): the build with one KV-stream rule for every device
# (evict-normal and unpromoted whole-tile maps up to 64 heads) against the H100's old rule
# (-DMLAW_SM90_KV_NORMAL_MAX_HEADS=32 -DMLAW_SM90_KV_PROMOTION_NONE_MAX_HEADS=16; "speedup" > 1:
# the old rule is faster): the checks; the 32 / 64-head rows, MTP rows, B=1 and the paced rows;
# the off-grid sweep against fa3.
OLD="-DMLAW_SM90_KV_NORMAL_MAX_HEADS=32 -DMLAW_SM90_KV_PROMOTION_NONE_MAX_HEADS=16"
B=benchmarks
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases h32 --variant='$OLD'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases h64mtp --variant='$OLD'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases short --variant='$OLD'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases paced --variant='$OLD'" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases sweep --tag s32-h100-sweep"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
