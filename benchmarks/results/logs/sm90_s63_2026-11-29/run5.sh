#!/usr/bin/env bash
# Session 63, device call 5 (one H200): what a narrow item's prologue costs at B=1 (run 4's
# trace: Q converted -> fragments staged ~2960 clocks). Traces at H=16 B=1 L=4096 with event 30
# now at narrow_tiles' entry (before the staging): t6 the kept build, t9 the staging in two
# rounds of 9 fragments (-DMLAW_SM90_NARROW_QSTAGE=9) instead of three of 6, tnq a probe with
# no staging (-DMLAW_SM90_PROBE_NO_QSTAGE=1, wrong results); then the A/B of q9 (the two-round
# staging, no trace) against the JIT cache's kept build (speedup > 1: q9 faster).
B=benchmarks
C="python $B/check_sm90_dev.py"
T="--trace 16 1 4096 --fp8"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $C $T --variant=lib:.cache/variant/t6/{dt}.so" \
  "timeout 60 $C $T --variant=lib:.cache/variant/t9/{dt}.so" \
  "timeout 60 $C $T --variant=lib:.cache/variant/tnq/{dt}.so" \
  "timeout 200 $C --fp8 --ab-cases narrow --variant=lib:.cache/variant/q9/{dt}.so"
