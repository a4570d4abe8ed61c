#!/usr/bin/env bash
# Session 39, device call 5: L2 policies of what is not KV (run 4: the items rows are bound by
# DRAM bytes, Q and out included; an L2 prefetch of the next item's Q made them slower):
# Q's TMA boxes evict-normal (-DMLAW_SM90_Q_POLICY=1) or evict-first (=0) instead of
# evict-last, and the copy-out to `out` with an evict-first hint (-DMLAW_SM90_OUT_EVICT_FIRST=1).
# A/B, speedup > 1: the variant faster. The default build's SASS is session 38's.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "$C --variant=-DMLAW_SM90_Q_POLICY=1 --ab-cases items" \
  "$C --variant=-DMLAW_SM90_Q_POLICY=0 --ab-cases items" \
  "$C --variant=-DMLAW_SM90_OUT_EVICT_FIRST=1 --ab-cases items" \
  "$C --variant=-DMLAW_SM90_Q_POLICY=1 --ab-cases compute" \
  "$C --variant=-DMLAW_SM90_Q_POLICY=0 --ab-cases split" \
  "$C --variant=-DMLAW_SM90_OUT_EVICT_FIRST=1 --ab-cases compute"
