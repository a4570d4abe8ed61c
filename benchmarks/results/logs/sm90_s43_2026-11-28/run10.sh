#!/usr/bin/env bash
# Session 43, device call 10 (one GPU): the e4m3 rows' maxima read from global memory while the
# Q tile's TMA is in flight (q_row_scales), the landed tile read once and written once
# (q_to_f16): runs 6-8 put the conversion at ~4300 clocks an item on the landed tile (read
# twice). Checks, every fp8 GPU test, A/B against run 8 / 9's build (.cache/jit/e4m3run8),
# B=1 trace, the latency and compute rows beside fa3.
B=benchmarks
C="python $B/check_sm90_dev.py"
V="--variant=lib:.cache/jit/e4m3run8/{dt}.so"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $C --fp8" \
  "timeout 150 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests -k 'fp8 or e4m3'" \
  "timeout 90 $C --fp8 --ab-only $V --ab-cases split" \
  "timeout 90 $C --fp8 --ab-only $V --ab-cases compute" \
  "timeout 60 $C --fp8 --trace 128 1 1024 --variant=lib:.cache/jit/e4m3trace/{dt}.so" \
  "timeout 90 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases latency,middle --tag s43-rowscales"
