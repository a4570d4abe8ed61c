#!/usr/bin/env bash
# Session 43, device call 8 (one GPU): the e4m3 Q conversion with the eight lanes of a quarter
# warp on eight bank groups (runs 6-7: two lanes shared one, ~4500-5700 clocks an item;
# shared-memory bandwidth bounds it). Checks, fp8 tests, A/B against session 42's e4m3 build
# (split, compute, grid cases), B=1 and multi-item traces, the grid rows beside fa3, the fp8
# sweep.
B=benchmarks
C="python $B/check_sm90_dev.py"
V="--variant=lib:.cache/jit/e4m3old/{dt}.so"
T="--variant=lib:.cache/jit/e4m3trace/{dt}.so"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $C --fp8" \
  "timeout 120 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 120 $C --fp8 --ab-only $V --ab-cases split" \
  "timeout 120 $C --fp8 --ab-only $V --ab-cases compute" \
  "timeout 120 $C --fp8 --ab-only $V --ab-cases grid" \
  "timeout 60 $C --fp8 --trace 128 1 1024 $T" \
  "timeout 60 $C --fp8 --trace 128 256 512 $T" \
  "timeout 150 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases middle,latency,compute,memory --tag s43-f16ops4" \
  "timeout 150 python $B/bench_decode.py --backends sm90_fp8,fi_fa3 --cases sweep --tag s43-f16ops4-sweep"
