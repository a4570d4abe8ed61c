#!/usr/bin/env bash
# Session 60, device call 5 (one H200): the tall instance's GEMMs with K and V^T as wgmma A
# fragments widened in registers from the stage's e4m3 bytes (the producer no longer widens its
# tiles; Q's columns permuted within each 16 by q_to_f16). fp8 checks and fp8 tests with
# MLA_WRAPPER_SM90_TALL=all, then A/Bs against the previous build's libraries (lib: variant =
# bd3d4fd; speedup < 1: the new build faster) at pages 64 and 1, and its trace at B=128.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases tp4 --variant=lib:.cache/variant/s60base/{dt}.so"
export MLA_WRAPPER_SM90_TALL=all
TAIL=${TAIL:-24} bash $B/device_run.sh \
  "timeout 90 python $B/check_sm90_dev.py --fp8" \
  "timeout 150 python -m pytest -q -x -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 60 $C --page 64" \
  "timeout 60 $C --page 1" \
  "timeout 40 python $B/check_sm90_dev.py --fp8 --page 64 --variant=-DMLAW_SM90_TRACE=1 --trace 32 128 4096"
