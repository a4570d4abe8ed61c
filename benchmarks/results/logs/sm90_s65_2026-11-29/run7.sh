#!/usr/bin/env bash
# Session 65, device call 10 (one H200): the combine's grid sized as for 64-row tiles under the
# narrow (16-row) and tall (32-row) plans (cg64: -DMLAW_COMBINE_GRID_ROWS=64, not in the tree;
# the grid then spreads the valid rows' warps over as many CTAs as a 64-row plan's, instead of
# ~1 CTA an SM at H=16 B=32) against the final tree's library: the narrow set and the TP4 set.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --fp8 --variant=lib:.cache/variant/cg64/{dt}.so"
TAIL=${TAIL:-40} bash $B/device_run.sh "timeout 60 $C --ab-cases narrow" "timeout 60 $C --ab-cases tp4"
