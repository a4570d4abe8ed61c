#!/usr/bin/env bash
# Session 38, device call 1: what the B=1 rows could gain from merging a tile's pieces on chip
# in one cluster instead of the combine kernel. Probes (launcher.cuh, timing only): no combine
# launched; the paged kernel in clusters of 16 (grid 128); both. A/B on the split cases (B=1
# also replayed from CUDA graphs), then the B=1 CUDA-graph timeline of this tree.
B=benchmarks
A="python $B/check_sm90_dev.py --ab-only --ab-cases split --variant="
TAIL=${TAIL:-24} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "$A '-DMLAW_SM90_PROBE_NO_COMBINE=1'" \
  "$A '-DMLAW_SM90_PROBE_CLUSTER=16'" \
  "$A '-DMLAW_SM90_PROBE_CLUSTER=16 -DMLAW_SM90_PROBE_NO_COMBINE=1'" \
  "python $B/check_sm90_dev.py --timeline 16 1 1024; python $B/check_sm90_dev.py --timeline 128 1 1024"
