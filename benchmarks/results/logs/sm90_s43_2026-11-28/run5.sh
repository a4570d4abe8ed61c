#!/usr/bin/env bash
# Session 43, device call 5 (one GPU): the e4m3 Q conversion with rolled loops and the rows'
# maxima as 16-bit magnitudes (vmaxu2) (run 4: the unrolled one held B=1's first score GEMM
# ~3800 clocks past session 42's build, 2.1 us a call). Checks, fp8 tests, A/B against session
# 42's e4m3 build on the split, compute and grid cases, the grid rows beside fa3 (no traces:
# the carried files stay under 64 MiB).
B=benchmarks
C="python $B/check_sm90_dev.py"
V="--variant=lib:.cache/jit/e4m3old/{dt}.so"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $C --fp8" \
  "timeout 120 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 120 $C --fp8 --ab-only $V --ab-cases split" \
  "timeout 120 $C --fp8 --ab-only $V --ab-cases compute" \
  "timeout 120 $C --fp8 --ab-only $V --ab-cases grid" \
  "timeout 150 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases middle,latency,compute,memory --tag s43-f16ops3"
