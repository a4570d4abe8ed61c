#!/usr/bin/env bash
# Session 60, device call 4 (one H200): what the e4m3 widening costs. Probe build
# -DMLAW_SM90_PROBE_NO_WIDEN=1 (wrong results: each tile handed to the consumers as its bytes
# land) A/B'd against the shipped kernel (speedup > 1: the probe faster) on the TP4 rows (tall
# plans, =all), the H=128 rows and the H=32/64 rows; traces of the probe and the kernel at
# fp8 H=32 B=128 L=4096 (tall) and H=128 B=64 L=4096 (wide).
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --fp8 --page 64"
T="python $B/check_sm90_dev.py --fp8 --page 64 --trace"
TAIL=${TAIL:-24} bash $B/device_run.sh \
  "MLA_WRAPPER_SM90_TALL=all timeout 60 $C --ab-cases tp4 --variant=-DMLAW_SM90_PROBE_NO_WIDEN=1" \
  "timeout 40 $C --ab-cases h128 --variant=-DMLAW_SM90_PROBE_NO_WIDEN=1" \
  "timeout 60 $C --ab-cases h32 --variant=-DMLAW_SM90_PROBE_NO_WIDEN=1" \
  "MLA_WRAPPER_SM90_TALL=all timeout 40 $T 32 128 4096 --variant='-DMLAW_SM90_PROBE_NO_WIDEN=1 -DMLAW_SM90_TRACE=1'" \
  "timeout 40 $T 128 64 4096 --variant='-DMLAW_SM90_PROBE_NO_WIDEN=1 -DMLAW_SM90_TRACE=1'" \
  "timeout 40 $T 128 64 4096 --variant=-DMLAW_SM90_TRACE=1"
