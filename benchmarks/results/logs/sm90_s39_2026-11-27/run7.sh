#!/usr/bin/env bash
# Session 39, device call 7: the L2 prefetch of the next item's Q (3 tiles before the current
# item's last) only where the current item has >= 32 tiles (runs 2-4: it lost on short items,
# gained ~1.5% on the compute rows and B=128 L=4096). A/B against -DMLAW_SM90_PREFETCH_Q=0
# (speedup > 1: without the prefetch faster; its SASS is session 38's).
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --variant=-DMLAW_SM90_PREFETCH_Q=0"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "$C --ab-cases compute" "$C --ab-cases items" "$C --ab-cases compute"
