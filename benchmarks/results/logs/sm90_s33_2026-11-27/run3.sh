#!/usr/bin/env bash
# Session 33, device call 3 (H100): runs 1-2's candidate (a paced CTA's first tile whole,
# -DMLAW_SM90_PACED_SKIP=1; the combine's plan lines prefetched into L2 by the attention CTAs,
# -DMLAW_SM90_PREFETCH_MERGES=1) against the default build on the paced rows after both
# flushes and on the split rows (B=1: the prefetch alone). "speedup" > 1: the variant is faster.
B=benchmarks
A="python $B/check_sm90_dev.py --ab-only"
C="-DMLAW_SM90_PACED_SKIP=1 -DMLAW_SM90_PREFETCH_MERGES=1"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "$A --ab-cases paced --variant='$C'" \
  "$A --ab-cases paced --flush clean --variant='$C'" \
  "$A --ab-cases split --variant='$C'" \
  "$A --ab-cases split --flush clean --variant='$C'"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
