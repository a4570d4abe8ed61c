#!/usr/bin/env bash
# Session 63, device call 2 (one H200): the narrow instance's Q converted in registers
# (narrow.cuh narrow_q_f16, no q_to_f16 pass on the fast path) and its O moved into `tiles`'
# layout by float4s. The JIT cache holds the new libraries; .cache/variant/old8 is the landed
# e4m3 library (6139733's kernels), so in the A/B below the "variant" is the OLD build
# (speedup < 1: the new build is faster). Then the fp8 tests, and traces of the new build
# (.cache/variant/n2tr, -DMLAW_SM90_TRACE=1) next to run 1's of the old one (tr8).
B=benchmarks
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 120 $C --fp8" \
  "timeout 240 python -m pytest -q -m gpu tests/test_fp8_kv.py -x" \
  "timeout 300 $C --fp8 --ab-only --ab-cases narrow --variant=lib:.cache/variant/old8/{dt}.so" \
  "timeout 60 $C --trace 16 1 4096 --fp8 --variant=lib:.cache/variant/n2tr/{dt}.so" \
  "timeout 60 $C --trace 16 1 4096 --fp8 --variant=lib:.cache/variant/tr8/{dt}.so" \
  "timeout 60 $C --trace 16 4 4096 --fp8 --variant=lib:.cache/variant/n2tr/{dt}.so" \
  "timeout 60 $C --trace 16 4 4096 --fp8 --variant=lib:.cache/variant/tr8/{dt}.so"
