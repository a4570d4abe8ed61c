#!/usr/bin/env bash
# Session 33, device call 2 (H200): run 1's two gains together (a paced CTA's first tile whole,
# -DMLAW_SM90_PACED_SKIP=1; the combine's plan lines prefetched, -DMLAW_SM90_PREFETCH_MERGES=1)
# against the default build on the paced rows after both flushes, the split rows and the
# memory / middle rows; the first tile whole with tiles 1-2 paced (PACED_FIRST_TILES=3) on the
# paced rows. "speedup" > 1: the variant is faster.
B=benchmarks
A="python $B/check_sm90_dev.py --ab-only"
C="-DMLAW_SM90_PACED_SKIP=1 -DMLAW_SM90_PREFETCH_MERGES=1"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "$A --ab-cases paced --variant='$C'" \
  "$A --ab-cases paced --flush clean --variant='$C'" \
  "$A --ab-cases split --variant='$C'" \
  "$A --ab-cases memory --variant='$C'" \
  "$A --ab-cases paced --variant='-DMLAW_SM90_PACED_SKIP=1 -DMLAW_SM90_PACED_FIRST_TILES=3'" \
  "$A --ab-cases paced --flush clean --variant='-DMLAW_SM90_PACED_SKIP=1 -DMLAW_SM90_PACED_FIRST_TILES=3'"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
