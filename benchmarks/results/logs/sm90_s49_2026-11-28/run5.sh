#!/usr/bin/env bash
# Session 49, device call 5 (one H200): the full decode grid of the final kernels (the e4m3
# libraries new since session 48's run 5, the 16-bit ones' SASS unchanged) with every peer in one
# process (sm90, sm90_fp8, sm80, FlashInfer fa2 / fa3, FlashMLA), the fp8 sweep, and the quick
# sparse rows over the e4m3 cache and FlashMLA's fp8 rows.
B=benchmarks
TAIL=${TAIL:-80} bash $B/device_run.sh \
  "timeout 200 python $B/bench_decode.py --backends sm90,sm90_fp8,sm80,fi_fa2,fi_fa3,flashmla --tag s49-h200-full" \
  "timeout 90 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases sweep --tag s49-h200-sweep" \
  "timeout 150 python $B/bench_sparse.py --quick --fp8 --ds-mla"
