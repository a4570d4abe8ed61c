#!/usr/bin/env bash
# Session 39, device call 2: with early Q, the next item's Q boxes prefetched into L2 as the
# current item starts (MLAW_SM90_PREFETCH_Q; run 1's trace of H=128 B=512 L=512 had each item's
# Q land 1000-3000 clocks after the item began, from DRAM while every CTA's copy-out met it).
# Checks and the instance tests; A/B against -DMLAW_SM90_PREFETCH_Q=0 (speedup > 1: without the
# prefetch faster) on the items and compute rows; the trace again.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --variant=-DMLAW_SM90_PREFETCH_Q=0"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -x -k 'many_items or small_batch'" \
  "$C --ab-cases items" "$C --ab-cases compute" "$C --ab-cases items" \
  "python $B/check_sm90_dev.py --trace 128 512 512 --variant=-DMLAW_SM90_TRACE=1"
