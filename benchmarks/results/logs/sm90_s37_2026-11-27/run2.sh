#!/usr/bin/env bash
# Session 37, device call 2: run 1's dry pass dropped (it raised the combine to 95 registers,
# two CTAs an SM, and gained nothing at B=1). Instead the combine's units go row first (the
# merging warps and CTAs first in launch order), warps without rows exit without waiting (but
# the grid's first), its grid is capped at the CTAs that fit an SM at once (occupancy query)
# and its default instance is held to three CTAs an SM (launch bounds, 78 registers). CtaStart's
# words by cp.async (run 1) kept, A/B'd against its register form (-DMLAW_SM90_START_SMEM=0).
# "speedup" < 1: this tree is faster.
B=benchmarks
O="--variant=lib:.cache/old_s36/{dt}.so --ab-only"
S="--variant=-DMLAW_SM90_START_SMEM=0 --ab-only"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --variant=lib:.cache/old_s36/{dt}.so --ab-cases split" \
  "python $B/check_sm90_dev.py $O --ab-cases split --flush clean" \
  "python $B/check_sm90_dev.py $O --ab-cases paced" \
  "python $B/check_sm90_dev.py $O --ab-cases h128" \
  "python $B/check_sm90_dev.py $S --ab-cases short" \
  "python $B/check_sm90_dev.py $S --ab-cases split --flush clean" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
