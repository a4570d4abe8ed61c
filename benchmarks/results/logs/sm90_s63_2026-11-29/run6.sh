#!/usr/bin/env bash
# Session 63, device call 6 (one H200): run 5 found a narrow item's Q staging (each warp's
# fragments through its own Q-tile rows: ~2450 clocks of dependent shared-memory round trips at
# B=1) most of the narrow prologue. The JIT cache's build has q_to_f16 write a narrow item's
# rows 0-15 straight into the fragment order (consumer_steps.cuh narrow_q_slot), one 16-byte
# read a step in narrow_tiles. Its fp8 checks and tests, A/Bs against kept8 (052b845's library;
# speedup > 1: kept8 faster), a trace (f2tr).
B=benchmarks
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 120 $C --fp8" \
  "timeout 300 python -m pytest -q -m gpu tests/test_fp8_kv.py" \
  "timeout 200 $C --fp8 --ab-only --ab-cases narrow --variant=lib:.cache/variant/kept8/{dt}.so" \
  "timeout 200 $C --fp8 --ab-only --ab-cases memory --variant=lib:.cache/variant/kept8/{dt}.so" \
  "timeout 60 $C --trace 16 1 4096 --fp8 --variant=lib:.cache/variant/f2tr/{dt}.so"
