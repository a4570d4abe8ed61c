#!/usr/bin/env bash
# Session 43, device call 3 (one GPU): run 2's f16 GEMMs for an e4m3 cache, with Q converted by
# both consumer warpgroups (one load a chunk per pass, row maxima over the pair through
# red_sum) instead of the scorer alone (run 2: ~4800 clocks an item; B=1 1.17x slower), and
# the widening with eight loads of a thread in flight and three barriers (was four and four).
# Checks, fp8 tests, A/B against session 42's build (.cache/jit/e4m3old), a trace, the grid
# rows beside fa3, racecheck on the small fp8 cases.
B=benchmarks
C="python $B/check_sm90_dev.py"
V="--variant=lib:.cache/jit/e4m3old/{dt}.so"
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $C --fp8" \
  "timeout 120 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 120 $C --fp8 --ab-only $V --ab-cases grid" \
  "timeout 120 $C --fp8 --ab-only $V --ab-cases compute" \
  "timeout 60 $C --fp8 --trace 128 128 4096 --variant=lib:.cache/jit/e4m3trace/{dt}.so" \
  "timeout 60 $C --fp8 --trace 128 1 1024 --variant=lib:.cache/jit/e4m3trace/{dt}.so" \
  "timeout 150 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases middle,latency,compute,memory --tag s43-f16ops2" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8"
