#!/usr/bin/env bash
# Session 59, device call 6 (one H200, the session's last device minutes): the tall epilogue's
# fp32 O^T halves at a row pitch of 260 floats (the staging stores conflict-free instead of
# 4-way) and each lane reading / storing 4 columns of each 128 (contiguous warp accesses). With
# MLA_WRAPPER_SM90_TALL=all (tall plans at every batch size): the fp8 checks, the A/B against
# the committed tall library (variant = that library: above 1 means it is faster), the tall
# and graph tests.
B=benchmarks
export MLA_WRAPPER_SM90_TALL=all
C="python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases tp4 --variant=lib:.cache/variant/tallhead/{dt}.so"
TAIL=${TAIL:-18} bash $B/device_run.sh \
  "timeout 40 python $B/check_sm90_dev.py --fp8" \
  "timeout 60 $C --page 64" \
  "timeout 50 $C --page 1" \
  "unset MLA_WRAPPER_SM90_TALL; timeout 60 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py -k 'tall or graph'"
