#!/usr/bin/env bash
# Session 63, device call 3 (one H200): run 2's build (n2: Q converted in narrow_tiles, with an
# inline q_to_f16 copy for the slow path) ran the narrow B <= 4 rows 1.15-1.21x SLOWER under
# do_bench's flush (0.98-1.0x the time from warm CUDA-graph replays). The JIT cache now holds
# the candidate c1: the fast-path check in consume (one q_to_f16 call site), the conversion of
# the words in narrow_tiles, the float4 O move. A/Bs of c1 (default) against old8 (the landed
# library), n2 and mv (the landed Q path with only the float4 O move); speedup > 1: the
# variant is faster than c1. Then c1's fp8 checks and its narrow tests.
B=benchmarks
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 $C --fp8 --ab-only --ab-cases narrow --variant=lib:.cache/variant/old8/{dt}.so" \
  "timeout 200 $C --fp8 --ab-only --ab-cases narrow --variant=lib:.cache/variant/mv/{dt}.so" \
  "timeout 200 $C --fp8 --ab-only --ab-cases narrow --variant=lib:.cache/variant/n2/{dt}.so" \
  "timeout 120 $C --fp8" \
  "timeout 240 python -m pytest -q -m gpu tests/test_fp8_kv.py -k 'narrow or few_query or far_apart or near or grid'"
