#!/usr/bin/env bash
# Session 38, device call 4: the few-merges combine instance (16 slots a round, two CTAs an SM)
# for plans of up to 4 / 8 / 16 merge items (-DMLAW_COMBINE_FEW_MERGES, now 2): since session
# 37 the grid holds every unit at once either way, so a merge of 16 slots (H=64 B=4 L=2048, the
# row 1.02x slower than session 36) would take one round trip instead of two.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --variant="
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "${C}'-DMLAW_COMBINE_FEW_MERGES=4' --ab-cases short" \
  "${C}'-DMLAW_COMBINE_FEW_MERGES=8' --ab-cases short" \
  "${C}'-DMLAW_COMBINE_FEW_MERGES=16' --ab-cases short" \
  "${C}'-DMLAW_COMBINE_FEW_MERGES=16' --ab-cases paced"
