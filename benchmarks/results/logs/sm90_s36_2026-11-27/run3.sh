#!/usr/bin/env bash
# Session 36, device call 3: the consumers wait to start until the producer has issued the CTA's
# first KV tile (-DMLAW_SM90_CONSUMERS_AFTER_ISSUE=1; correct results): run 2 put ~1.4 us of a
# CTA's start (after an L2 flush) in instruction fetches from DRAM, and the no-math build (small
# consumer code) starts ~0.9 us sooner. Checks, A/Bs (paced after both flushes, split with CUDA
# graphs, compute), CTA spans with and without it after a read flush.
B=benchmarks
V=-DMLAW_SM90_CONSUMERS_AFTER_ISSUE=1
T=-DMLAW_SM90_TRACE=1
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --variant=$V --ab-cases paced" \
  "python $B/check_sm90_dev.py --variant=$V --ab-only --ab-cases paced --flush clean" \
  "python $B/check_sm90_dev.py --variant=$V --ab-only --ab-cases split" \
  "python $B/check_sm90_dev.py --variant=$V --ab-only --ab-cases compute" \
  "python $B/check_sm90_dev.py --variant='$T' --spans 16 16 4096 --cold --flush clean" \
  "python $B/check_sm90_dev.py --variant='$T $V' --spans 16 16 4096 --cold --flush clean"
