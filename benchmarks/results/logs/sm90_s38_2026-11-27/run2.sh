#!/usr/bin/env bash
# Session 38, device call 2: run 1's two probes that its quoting lost, each alone: no combine
# launched; the paged kernel in clusters of 16 (grid 128) with the combine.
B=benchmarks
A="python $B/check_sm90_dev.py --ab-only --ab-cases split --variant="
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "$A'-DMLAW_SM90_PROBE_NO_COMBINE=1'" \
  "$A'-DMLAW_SM90_PROBE_CLUSTER=16'"
