#!/usr/bin/env bash
# Session 39, device call 3: run 2's L2 prefetch of the next item's Q moved from the item's
# start (where warpgroup 1's warp 0 then waited for the next item's record: items rows
# 1.02-1.08x slower, compute rows 1.01-1.03x faster) to its first tile, after the row maxima's
# barrier. A/B against -DMLAW_SM90_PREFETCH_Q=0 (speedup > 1: without the prefetch faster).
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --variant=-DMLAW_SM90_PREFETCH_Q=0"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "$C --ab-cases items" "$C --ab-cases compute" "$C --ab-cases items" "$C --ab-cases compute"
