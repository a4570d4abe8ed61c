#!/usr/bin/env bash
# Session 52, device call 10 (one H200): the fp8 grid and the 16-head sweep of the final
# libraries (0e830c8: the pairwise score exchange) in one process with our bf16 path and FlashInfer fa3 (bf16 libraries
# only in the carry, with FlashInfer's wheels).
B=benchmarks
TAIL=${TAIL:-45} bash $B/device_run.sh \
  "timeout 240 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --tag s52-h200-fp8-final" \
  "timeout 200 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases sweep --tag s52-h200-sweep-final"
