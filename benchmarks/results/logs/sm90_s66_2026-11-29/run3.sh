#!/usr/bin/env bash
# Session 66, device call 3 (one H200): session 65's next step 4, TP4's tall plans at B=48-96
# with the combine grid sized for max(kRows, 64) rows (the landed tree, in the JIT cache) against
# a grid sized for the plan's own rows (`ownrows`: the landed tree built with the grid's rows =
# kRows, -DMLAW_COMBINE_OWN_ROWS on a local patch of combine_kernel.cuh; session 65's library
# before 8ab2209 had that grid). Three sets of the tp4 cases; a printed speedup above 1 means
# the own-rows grid is faster.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases tp4 --variant=lib:.cache/variant/ownrows/{dt}.so"
TAIL=${TAIL:-30} bash $B/device_run.sh "timeout 80 $C" "timeout 80 $C" "timeout 80 $C"
