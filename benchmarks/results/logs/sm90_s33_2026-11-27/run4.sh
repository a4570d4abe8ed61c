#!/usr/bin/env bash
# Session 33, device call 4 (H200): the committed build (8660683 + the combine's unit mapping
# refactored, same order) against the combine walking its units row-major
# (-DMLAW_COMBINE_ROW_MAJOR=1: the valid rows of every merge item first, so at few heads the
# combine CTAs with work are the first scheduled as attention CTAs leave), on the split,
# memory / middle and paced rows; the CUDA-graph timeline of the middle row. "speedup" > 1: the
# variant is faster.
B=benchmarks
A="python $B/check_sm90_dev.py --ab-only"
V="-DMLAW_COMBINE_ROW_MAJOR=1"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --variant='$V' --ab-cases split" \
  "$A --ab-cases split --flush clean --variant='$V'" \
  "$A --ab-cases memory --variant='$V'" \
  "$A --ab-cases paced --variant='$V'" \
  "python $B/check_sm90_dev.py --timeline 16 16 4096" \
  "python $B/check_sm90_dev.py --timeline 16 16 4096 --variant='$V'"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
