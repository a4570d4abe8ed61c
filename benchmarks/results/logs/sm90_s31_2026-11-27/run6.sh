#!/usr/bin/env bash
# Session 31, device call 6 (H200): the new rule (evict-normal KV stream and unpromoted whole-tile
# maps for <= 64 heads on an H200; the H100 unchanged) as the default build, against the old one
# as the variant (-DMLAW_SM90_KV_NORMAL_AMPLE_HEADS=16 -DMLAW_SM90_KV_PROMOTION_NONE_AMPLE_HEADS=16;
# "speedup" < 1: the new rule is faster): 32 / 64 heads, and with MTP rows past one row tile
# (two CTAs read each KV tile, where session 30 measured evict-normal at 0.95-0.97x for H=128);
# the checks; the GPU suite.
OLD="-DMLAW_SM90_KV_NORMAL_AMPLE_HEADS=16 -DMLAW_SM90_KV_PROMOTION_NONE_AMPLE_HEADS=16"
B=benchmarks
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --ab-cases h64mtp --variant='$OLD'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases h32 --variant='$OLD'" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
