#!/usr/bin/env bash
# Session 57, device call 6 (two H200s, nvidia-h200-x2): run 3's 16-bit racecheck again on a
# two-GPU host (its process ended with signal 11 there once; one H200 passed it twice, run 4):
# twice as run 3 ran it, then with only the first GPU visible.
B=benchmarks
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-6} bash $B/device_run.sh \
  "timeout 120 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "timeout 120 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "CUDA_VISIBLE_DEVICES=0 timeout 120 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small"
