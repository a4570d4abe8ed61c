#!/usr/bin/env bash
# Session 62, device call 9 (one H200): the e4m3 bytes' latent rows moved to the 16-bit blocks
# 4-7's place (both builds), and the widening instance's tiles widened half by half, its
# cp.async tiles landing a half at a time on `raw` / `raw2` (-DMLAW_SM90_RAW_SPLIT=1,
# .cache/variant/split): fp8 checks on it, A/B at pages 1 and 64 against the default libraries
# of this tree, the page-1 trace (splittr).
B=benchmarks
V=--variant=lib:.cache/variant/split/{dt}.so
A="python $B/check_sm90_dev.py --ab-only --fp8 $V"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 150 python $B/check_sm90_dev.py --backend sm90 --fp8 $V" \
  "timeout 90 $A --page 1 --ab-cases compute" \
  "timeout 90 $A --page 1 --ab-cases h128" \
  "timeout 60 python $B/check_sm90_dev.py --trace 128 64 4096 --page 1 --fp8 --variant=lib:.cache/variant/splittr/{dt}.so"
