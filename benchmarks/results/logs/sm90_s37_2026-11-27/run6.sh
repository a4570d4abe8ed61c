#!/usr/bin/env bash
# Session 37, device call 6: probe, the combine's grid raised to at least one / two CTAs an SM
# (-DMLAW_COMBINE_GRID_PER_SM=1 / 2): with units dealt to the CTAs in turn, B=1's merging warps
# then sit on more SMs (H=128 B=1: 64 CTAs of 8 merging warps). "speedup" > 1: the probe faster.
B=benchmarks
G1="--variant=-DMLAW_COMBINE_GRID_PER_SM=1 --ab-only"
G2="--variant=-DMLAW_COMBINE_GRID_PER_SM=2 --ab-only"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py $G1 --ab-cases split --flush clean" \
  "python $B/check_sm90_dev.py $G2 --ab-cases split --flush clean" \
  "python $B/check_sm90_dev.py $G1 --ab-cases short"
