#!/usr/bin/env bash
# Session 62, device call 2 (one H200): the fp8-MMA instance's first build (fp8mma.cuh; the
# e4m3 libraries built here with -DMLAW_SM90_FP8MMA=1 -> .cache/variant/q8/{dt}.so). Plans
# without cluster pairs (MLA_WRAPPER_SM90_PAIRS=0, which the instance needs) for both sides.
# The fp8 checks on the variant (then its A/B on the default cases), the compute rows and the
# H=128 rows A/B (below 1: the variant faster).
B=benchmarks
V=--variant=lib:.cache/variant/q8/{dt}.so
export MLA_WRAPPER_SM90_PAIRS=0
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 150 python $B/check_sm90_dev.py --backend sm90 --fp8 $V" \
  "timeout 90 python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases compute $V" \
  "timeout 90 python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases h128 $V"
