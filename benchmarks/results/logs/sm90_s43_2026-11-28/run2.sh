#!/usr/bin/env bash
# Session 43, device call 2 (one GPU): an e4m3 cache's GEMMs in f16 (the producer's widening one
# cvt a pair; the scorer converts Q in place, row by row times a power of two, the rope columns
# times kpe_scale / ckv_scale). Checks, fp8 tests, A/B against the shipped build
# (.cache/jit/e4m3old: session 42's bf16-operand kernel), a trace, the grid rows beside fa3.
B=benchmarks
C="python $B/check_sm90_dev.py"
V="--variant=lib:.cache/jit/e4m3old/{dt}.so"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $C --fp8" \
  "timeout 120 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 120 $C --fp8 --ab-only $V --ab-cases grid" \
  "timeout 120 $C --fp8 --ab-only $V --ab-cases compute" \
  "timeout 60 $C --fp8 --trace 128 128 4096 --variant=lib:.cache/jit/e4m3trace/{dt}.so" \
  "timeout 150 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases middle,latency,compute,memory --tag s43-f16ops"
