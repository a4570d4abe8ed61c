#!/usr/bin/env bash
# Session 32, device call 5 (H200): run 4's spans put the middle row H=16 B=16 L=4096 at ~3.0 us
# a tile per CTA after do_bench's flush against ~2.4 in the long H=16 B=64 L=4096 row: its
# CTAs are paced (16-token boxes, promoted maps, evict-first), chosen on an H200 in session 21,
# before the whole-tile path took one 4-D box (s25) and unpromoted maps (s29). The paced rows
# against: no paced loads (-DMLAW_SM90_PACED_MAX_TILES=0), no paced loads and short items
# evict-normal (+ -DMLAW_SM90_KV_FIRST_SHORT=0), 32-token paced boxes (-DMLAW_SM90_PACED_ROWS=32)
# ("speedup" > 1: the variant is faster).
B=benchmarks
A="python $B/check_sm90_dev.py --ab-only --ab-cases paced"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "$A --variant='-DMLAW_SM90_PACED_MAX_TILES=0'" \
  "$A --variant='-DMLAW_SM90_PACED_MAX_TILES=0 -DMLAW_SM90_KV_FIRST_SHORT=0'" \
  "$A --variant='-DMLAW_SM90_PACED_ROWS=32'" \
  "$A --flush clean --variant='-DMLAW_SM90_PACED_MAX_TILES=0'"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
