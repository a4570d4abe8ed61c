#!/usr/bin/env bash
# Session 62, device call 7 (one H200): whole e4m3 tiles off the TMA maps' path (page 1 here) by
# bulk copies of 128-byte rows instead of cp.async's 16-byte pieces (-DMLAW_SM90_BULK_ROWS=1,
# .cache/variant/bulk; unswizzled rows, dequant_tile swz = 0): the fp8 checks on it, A/B against
# the default libraries at page 1 (compute and H=128 rows), and its page-1 trace (bulktr).
B=benchmarks
V=--variant=lib:.cache/variant/bulk/{dt}.so
A="python $B/check_sm90_dev.py --ab-only --fp8 $V --page 1"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 150 python $B/check_sm90_dev.py --backend sm90 --fp8 $V" \
  "timeout 90 $A --ab-cases compute" \
  "timeout 90 $A --ab-cases h128" \
  "timeout 60 python $B/check_sm90_dev.py --trace 128 64 4096 --page 1 --fp8 --variant=lib:.cache/variant/bulktr/{dt}.so"
