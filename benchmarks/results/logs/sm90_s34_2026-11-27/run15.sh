#!/usr/bin/env bash
# Session 34, device call 15 (the same H200, warm): three pacing variants for the H=16 B=16
# L=4096 row, each A/B'd on the paced cases after do_bench's flush and after a read flush:
# a paced CTA's third tile alone in paced boxes (mask 0x4), its second and fourth (0xA), and
# the second tile's boxes of 8 tokens instead of 16 (PACED_ROWS=8).
B=benchmarks
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PACED_TILE_MASK=0x4 --ab-only --ab-cases paced" \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PACED_TILE_MASK=0x4 --ab-only --ab-cases paced --flush clean" \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PACED_TILE_MASK=0xA --ab-only --ab-cases paced" \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PACED_TILE_MASK=0xA --ab-only --ab-cases paced --flush clean" \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PACED_ROWS=8 --ab-only --ab-cases paced" \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PACED_ROWS=8 --ab-only --ab-cases paced --flush clean"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
