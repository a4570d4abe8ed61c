#!/usr/bin/env bash
# Session 44, device call 3 (one GPU): q_to_f16_few, the e4m3 Q conversion of tiles with up to
# 32 valid rows spread over all eight consumer warps (run 2: at H=16 B=1 two warps did it,
# ~3000 clocks). The 14 fp8 checks, every fp8 GPU test (new: test_fp8_few_query_rows, 1-33
# rows, rows far apart in magnitude), A/B against run 2's build (qkeep: "speedup" > 1 means
# qkeep faster) on the split and grid cases, B=1 traces, the latency / middle rows beside fa3.
B=benchmarks
C="python $B/check_sm90_dev.py"
V="--variant=lib:.cache/jit/qkeep/{dt}.so"
T="--variant=lib:.cache/jit/t_few/{dt}.so"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $C --fp8" \
  "timeout 150 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests -k 'fp8 or e4m3'" \
  "timeout 90 $C --fp8 --ab-only $V --ab-cases split" \
  "timeout 120 $C --fp8 --ab-only $V --ab-cases grid" \
  "timeout 60 $C --fp8 --trace 16 1 1024 $T" \
  "timeout 60 $C --fp8 --trace 128 1 1024 $T" \
  "timeout 90 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases latency,middle --tag s44-few"
