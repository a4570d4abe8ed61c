#!/usr/bin/env bash
# Session 38, device call 13: early Q as its own kernel instance, picked where a run may give
# CTAs several items (launcher.cuh early_q_for; the other instance's SASS is the one before
# early Q). Checks and tests, then A/B against -DMLAW_SM90_EARLY_Q=0 on the split cases (B=1:
# the same instance both ways) and the items cases (speedup < 1: this tree faster).
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --variant=-DMLAW_SM90_EARLY_Q=0"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -x -k 'many_items or small_batch or many_merge'" \
  "$C --ab-cases split" "$C --ab-cases items"
