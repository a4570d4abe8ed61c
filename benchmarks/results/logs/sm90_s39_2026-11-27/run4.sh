#!/usr/bin/env bash
# Session 39, device call 4: the L2 prefetch of the next item's Q issued MLAW_SM90_PREFETCH_Q
# tiles before the current item's last (this tree: 3) against 0 (off), 1 and 1000 (its first
# tile, run 3's build: items rows 1.016-1.076x slower, compute rows 1.0-1.036x faster; the
# prefetched lines may leave L2 before their use). Speedup > 1: the variant faster.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "$C --variant=-DMLAW_SM90_PREFETCH_Q=0 --ab-cases items" \
  "$C --variant=-DMLAW_SM90_PREFETCH_Q=0 --ab-cases compute" \
  "$C --variant=-DMLAW_SM90_PREFETCH_Q=1 --ab-cases items" \
  "$C --variant=-DMLAW_SM90_PREFETCH_Q=1 --ab-cases compute" \
  "$C --variant=-DMLAW_SM90_PREFETCH_Q=1000 --ab-cases items" \
  "$C --variant=-DMLAW_SM90_PREFETCH_Q=1000 --ab-cases compute"
