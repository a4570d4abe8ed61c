#!/usr/bin/env bash
# Session 56, device call 5 (one H200): traces (MLAW_SM90_TRACE=1) of the fp8 wide instance at
# H=32 B=64 L=4096 with the tall items (`tall8t`, -DMLAW_SM90_TALL=1) and without (`base8t`),
# to see where run 4's tall tiles lost their time.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $C --trace 32 64 4096 --variant=lib:$V/tall8t/{dt}.so" \
  "timeout 60 $C --trace 32 64 4096 --variant=lib:$V/base8t/{dt}.so"
