#!/usr/bin/env bash
# Session 45, device call 4 (one GPU): run 3's step 5 again with --variant=... (its argument
# starts with '-'): the sparse quick rows and H=16 rows with the fp8 cache, A/B against the build
# without the cp.async line prefetch.
B=benchmarks
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 python $B/bench_sparse.py --quick --fp8 --variant=-DMLAW_SM90_E4M3_PREFETCH_LINES=0"
