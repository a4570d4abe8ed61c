#!/usr/bin/env bash
# Session 63, device call 4 (one H200): the kept change alone (the narrow items' O moved into
# `tiles`' layout by float4s; run 3's `mv`, SASS-identical) in the JIT cache against the landed
# e4m3 library (old8; speedup > 1: the landed one faster), on the narrow instance's rows and
# the fp8 memory / middle rows; the fp8 tests; a trace of the kept build (mvtr) at H=16 B=1
# L=4096 (run 2 step 5 has the landed one's).
B=benchmarks
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 $C --fp8 --ab-only --ab-cases narrow --variant=lib:.cache/variant/old8/{dt}.so" \
  "timeout 200 $C --fp8 --ab-only --ab-cases memory --variant=lib:.cache/variant/old8/{dt}.so" \
  "timeout 120 $C --fp8" \
  "timeout 300 python -m pytest -q -m gpu tests/test_fp8_kv.py" \
  "timeout 60 $C --trace 16 1 4096 --fp8 --variant=lib:.cache/variant/mvtr/{dt}.so"
