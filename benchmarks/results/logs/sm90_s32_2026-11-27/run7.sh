#!/usr/bin/env bash
# Session 32, device call 7 (H200): paced loads win after do_bench's dirty flush and lose after
# a read flush (runs 5-6: no pacing 0.88-0.96x / 1.01-1.07x). Looking for a rule good after
# both: 32-token paced boxes (-DMLAW_SM90_PACED_ROWS=32), and paced boxes for a CTA's first one
# or two tiles only (-DMLAW_SM90_PACED_FIRST_TILES=1 / 2); "speedup" > 1: the variant is faster.
B=benchmarks
A="python $B/check_sm90_dev.py --ab-only --ab-cases paced"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "$A --variant='-DMLAW_SM90_PACED_ROWS=32'" \
  "$A --flush clean --variant='-DMLAW_SM90_PACED_ROWS=32'" \
  "$A --variant='-DMLAW_SM90_PACED_FIRST_TILES=1'" \
  "$A --flush clean --variant='-DMLAW_SM90_PACED_FIRST_TILES=1'" \
  "$A --variant='-DMLAW_SM90_PACED_FIRST_TILES=2'" \
  "$A --flush clean --variant='-DMLAW_SM90_PACED_FIRST_TILES=2'"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
