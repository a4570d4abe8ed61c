#!/usr/bin/env bash
# Session 38, device call 12: did early Q cost the B=1 rows (run 11's B=1 graph replays came
# 3-6% above session 37's on another H100)? A/B against -DMLAW_SM90_EARLY_Q=0 on the split
# cases (B=1 also from CUDA graphs; speedup > 1: without early Q faster).
B=benchmarks
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --ab-only --variant=-DMLAW_SM90_EARLY_Q=0 --ab-cases split"
