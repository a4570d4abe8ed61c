#!/usr/bin/env bash
# Session 50, device call 5 (one H200): the final kernels' full grid with every peer in one
# process (sm90, sm90_fp8, sm80, FlashInfer fa2 / fa3, FlashMLA), to recheck run 2's middle row
# H=16 B=16 L=4096 (1.098x fa3; the same 16-bit SASS ran 1.11-1.14x in session 49), and the
# compute rows repeated with fa3 and FlashMLA.
B=benchmarks
TAIL=${TAIL:-80} bash $B/device_run.sh \
  "timeout 200 python $B/bench_decode.py --backends sm90,sm90_fp8,sm80,fi_fa2,fi_fa3,flashmla --tag s50-h200-full" \
  "timeout 100 python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases compute --tag s50-h200-compute-rep"
