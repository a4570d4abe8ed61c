#!/usr/bin/env bash
# Session 60, device call 3 (one H200): the tall instance's producer issues a tile's TMA boxes
# at the first of the previous tile's widening barriers that sees the stage free
# (MLAW_SM90_EARLY_ISSUE=1, the default; 0: after the widening as before; 2: in the wide
# instance too). fp8 checks and the fp8 tests (default and MLA_WRAPPER_SM90_TALL=all), the tall
# trace at B=128, then A/Bs (speedup > 1: the variant faster): TP4 at pages 64 and 16 against
# EARLY_ISSUE=0, and the wide instance with EARLY_ISSUE=2 (H=128 rows; H=32/64 with 64-row plans).
B=benchmarks
P="python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py"
C="python $B/check_sm90_dev.py --ab-only --fp8"
TAIL=${TAIL:-24} bash $B/device_run.sh \
  "MLA_WRAPPER_SM90_TALL=all timeout 90 python $B/check_sm90_dev.py --fp8" \
  "timeout 120 $P" \
  "MLA_WRAPPER_SM90_TALL=all timeout 120 $P" \
  "MLA_WRAPPER_SM90_TALL=all timeout 40 python $B/check_sm90_dev.py --fp8 --page 64 --variant=-DMLAW_SM90_TRACE=1 --trace 32 128 4096" \
  "MLA_WRAPPER_SM90_TALL=all timeout 60 $C --ab-cases tp4 --page 64 --variant=-DMLAW_SM90_EARLY_ISSUE=0" \
  "MLA_WRAPPER_SM90_TALL=all timeout 50 $C --ab-cases tp4 --page 16 --variant=-DMLAW_SM90_EARLY_ISSUE=0" \
  "timeout 40 $C --ab-cases h128 --page 64 --variant=-DMLAW_SM90_EARLY_ISSUE=2" \
  "MLA_WRAPPER_SM90_TALL=0 timeout 60 $C --ab-cases h32 --page 64 --variant=-DMLAW_SM90_EARLY_ISSUE=2"
