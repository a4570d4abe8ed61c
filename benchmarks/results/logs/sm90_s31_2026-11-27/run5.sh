#!/usr/bin/env bash
# Session 31, device call 5 (H200): run 4's grid had TP4 (H=32 B=64 L=4096) at 0.998x fa3, at
# 0.955x the speed of H=16 on the same bytes. The H200 gives the KV stream evict-normal and
# unpromoted whole-tile maps only up to 16 heads; at 32 and 64 heads one row tile reads each KV
# tile too (DRAM-bound). Variant: both up to 64 heads ("speedup" > 1: the variant is faster),
# after do_bench's flush (twice) and after a read flush.
V="-DMLAW_SM90_KV_NORMAL_AMPLE_HEADS=64 -DMLAW_SM90_KV_NORMAL_MAX_HEADS=64 -DMLAW_SM90_KV_PROMOTION_NONE_MAX_HEADS=64"
B=benchmarks
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --ab-only --ab-cases h32 --variant='$V'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases h32 --variant='$V'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases h32 --flush clean --variant='$V'"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
