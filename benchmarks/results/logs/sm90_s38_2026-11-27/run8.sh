#!/usr/bin/env bash
# Session 38, device call 8: a CTA's next item's Q by TMA during its current item's last tile,
# that item's rows staged in its last KV stage (mla_kernel.cuh MLAW_SM90_EARLY_Q). Checks, the
# new multi-item test and the sparse tests, then A/B against -DMLAW_SM90_EARLY_Q=0 (the
# previous schedule; speedup > 1 means it is faster) on CTAs of several items and the compute rows.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --variant=-DMLAW_SM90_EARLY_Q=0"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -x -k 'many_items or many_merge or small_batch or test_grid'" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py -x" \
  "$C --ab-cases items" "$C --ab-cases compute"
