#!/usr/bin/env bash
# Session 61, device call 4 (one H200): the tall instance's items of their own (not a cluster
# pair's half) store their rows straight from O^T's registers (tall.cuh; run 3's trace: the
# staging through the Q tile ~1380 clocks and the copy-out ~3500 at B=1 L=1024). The fp8 tests,
# fp8 checks with MLA_WRAPPER_SM90_TALL=all, racecheck / memcheck on the small fp8 cases with
# =all, the TP4 A/B against the landed libraries (d048604's e4m3 libs in .cache/variant/s61base;
# below 1: the new build faster) at pages 64 and 1, and the B=1 L=1024 trace again.
B=benchmarks
S="compute-sanitizer --error-exitcode 1"
A="python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases tp4 --variant=lib:.cache/variant/s61base/{dt}.so"
T="python $B/check_sm90_dev.py --fp8 --page 64 --variant=-DMLAW_SM90_TRACE=1 --trace 32"
export MLA_WRAPPER_SM90_TALL=all
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "MLA_WRAPPER_SM90_TALL= timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 60 python $B/check_sm90_dev.py --backend sm90 --fp8" \
  "timeout 130 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 50 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 60 $A --page 64" "timeout 60 $A --page 1" \
  "timeout 40 $T 1 1024"
