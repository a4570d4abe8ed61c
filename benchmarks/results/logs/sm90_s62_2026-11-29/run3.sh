#!/usr/bin/env bash
# Session 62, device call 3 (one H200): the fp8-MMA instance (second form: V^T's fragments read
# under the score GEMM / after each half's exponentials, P split in f16, 56 / 224 registers) A/B
# against the default e4m3 libraries on the compute and H=128 rows (pairs off on both sides),
# and per-tile traces at H=128 B=64 L=4096 of both (trace builds -DMLAW_SM90_TRACE=1:
# .cache/variant/q8tr, .cache/variant/basetr).
B=benchmarks
V=--variant=lib:.cache/variant/q8/{dt}.so
export MLA_WRAPPER_SM90_PAIRS=0
T="python $B/check_sm90_dev.py --fp8 --page 64 --trace 128 64 4096"
TAIL=${TAIL:-60} bash $B/device_run.sh \
  "timeout 90 python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases compute $V" \
  "timeout 60 $T --variant=lib:.cache/variant/q8tr/{dt}.so" \
  "timeout 60 $T --variant=lib:.cache/variant/basetr/{dt}.so"
