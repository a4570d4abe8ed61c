#!/usr/bin/env bash
# Session 38, device call 7: the many-merges combine instance (plans of more than num_ctas / 5
# merges: H=128 B=16 L=4096, whose merge took 3.0 us after the wait in run 3) with whole rows a
# warp (kCombineManyParts 1, 32 bytes a lane and slot): 4 slots a round at two CTAs an SM (124
# registers), or 2 a round at three (80); middle and cut rows.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --variant="
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "${C}'-DMLAW_COMBINE_MANY_PARTS=1 -DMLAW_COMBINE_MANY_SLOT_BATCH=4 -DMLAW_COMBINE_MANY_CTAS_PER_SM=2' --ab-cases memory" \
  "${C}'-DMLAW_COMBINE_MANY_PARTS=1 -DMLAW_COMBINE_MANY_SLOT_BATCH=2 -DMLAW_COMBINE_MANY_CTAS_PER_SM=3' --ab-cases memory" \
  "${C}'-DMLAW_COMBINE_MANY_PARTS=1 -DMLAW_COMBINE_MANY_SLOT_BATCH=4 -DMLAW_COMBINE_MANY_CTAS_PER_SM=2' --ab-cases cuts"
