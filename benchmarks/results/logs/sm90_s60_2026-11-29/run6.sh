#!/usr/bin/env bash
# Session 60, device call 6 (one H200): run 5's register-widened tall build with one V^T
# fragment set (a second one spilled 4 bytes), and the variant whose two warpgroups each score
# half of a tile's k-steps (-DMLAW_SM90_TALL_SPLIT_S=1: the scorer's S GEMM took 1392 clocks of
# run 5's 3546-clock period). fp8 checks (MLA_WRAPPER_SM90_TALL=all) of both, A/Bs (split
# variant against this build: speedup > 1 the variant faster; this build against bd3d4fd's
# libraries: speedup < 1 this build faster) and both traces at B=128.
B=benchmarks
export MLA_WRAPPER_SM90_TALL=all
T="python $B/check_sm90_dev.py --fp8 --page 64 --trace 32 128 4096"
TAIL=${TAIL:-24} bash $B/device_run.sh \
  "timeout 60 python $B/check_sm90_dev.py --fp8" \
  "timeout 90 python $B/check_sm90_dev.py --fp8 --ab-cases tp4 --page 64 --variant=-DMLAW_SM90_TALL_SPLIT_S=1" \
  "timeout 60 python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases tp4 --page 64 --variant=lib:.cache/variant/s60base/{dt}.so" \
  "timeout 30 $T --variant=-DMLAW_SM90_TRACE=1" \
  "timeout 30 $T --variant='-DMLAW_SM90_TALL_SPLIT_S=1 -DMLAW_SM90_TRACE=1'"
