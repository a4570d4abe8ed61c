#!/usr/bin/env bash
# Session 32, device call 8 (H100): paced boxes (8 tokens here) for a paced CTA's first two or
# four tiles only (-DMLAW_SM90_PACED_FIRST_TILES=2 / 4) against every tile paced, after
# do_bench's flush and after a read flush (H200, run 7: first two 0.99-1.01x / 1.02-1.05x;
# H100, run 6: no pacing 0.88-0.94x / 1.01-1.04x); "speedup" > 1: the variant is faster.
B=benchmarks
A="python $B/check_sm90_dev.py --ab-only --ab-cases paced"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "$A --variant='-DMLAW_SM90_PACED_FIRST_TILES=2'" \
  "$A --flush clean --variant='-DMLAW_SM90_PACED_FIRST_TILES=2'" \
  "$A --variant='-DMLAW_SM90_PACED_FIRST_TILES=4'" \
  "$A --flush clean --variant='-DMLAW_SM90_PACED_FIRST_TILES=4'"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
