#!/usr/bin/env bash
# Session 65, device call 11 (one H200): cg64 (the combine's grid sized as for 64-row tiles,
# -DMLAW_COMBINE_GRID_ROWS=64) checked (NaN-poisoned outputs, fresh data, the reference: the
# 16-row narrow plans and 32-row tall plans among the cases) and A/B'd again: the narrow set
# (after the checks) and the TP4 set.
B=benchmarks
V="--fp8 --variant=lib:.cache/variant/cg64/{dt}.so"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 120 python $B/check_sm90_dev.py $V --ab-cases narrow" \
  "timeout 60 python $B/check_sm90_dev.py --ab-only $V --ab-cases tp4"
