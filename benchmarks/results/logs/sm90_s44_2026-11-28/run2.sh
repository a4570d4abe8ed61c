#!/usr/bin/env bash
# Session 44, device call 2 (one GPU): the tree with run 1's qkeep conversion (q_to_f16 loads
# its 18 chunks at once and keeps them in registers). The 14 fp8 checks, every fp8 GPU test,
# B=1 traces with the consumers' wait start (is the ~1000 clocks between "Q converted" and the
# first tile's wait in the code before the wait or in the wait?), the grid rows and the fp8
# sweep beside FlashInfer fa3.
B=benchmarks
C="python $B/check_sm90_dev.py"
T="--variant=lib:.cache/jit/t_qkeep/{dt}.so"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $C --fp8" \
  "timeout 150 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests -k 'fp8 or e4m3'" \
  "timeout 60 $C --fp8 --trace 128 1 1024 $T" \
  "timeout 60 $C --fp8 --trace 16 1 1024 $T" \
  "timeout 150 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases middle,latency,compute,memory --tag s44-qkeep" \
  "timeout 150 python $B/bench_decode.py --backends sm90_fp8,fi_fa3 --cases sweep --tag s44-qkeep-sweep"
