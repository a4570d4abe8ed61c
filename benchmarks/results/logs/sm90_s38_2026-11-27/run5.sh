#!/usr/bin/env bash
# Session 38, device call 5: the many-merges combine instance loading 4 slots a round instead
# of 2 (three CTAs an SM: 79 registers; at four it spills), on the middle and cut rows; then
# this tree (few-merges instance up to 16 merges) through the GPU tests of the wrapper.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --variant="
V="'-DMLAW_COMBINE_MANY_SLOT_BATCH=4 -DMLAW_COMBINE_MANY_CTAS_PER_SM=3'"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "${C}${V} --ab-cases memory" \
  "${C}${V} --ab-cases cuts" \
  "python $B/check_sm90_dev.py" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -x"
