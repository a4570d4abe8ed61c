#!/usr/bin/env bash
# Session 47, device call 11 (one GPU): the 16-bit H=16 decode rows (vLLM's TP8 shape) with the
# gather prefetch on (MLA_WRAPPER_GATHER_L2_PREFETCH=1) and with the H200 default (off),
# alternately, separate processes (bench_sparse --quick --fp8 adds the H=16 rows).
B=benchmarks
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "MLA_WRAPPER_GATHER_L2_PREFETCH=1 timeout 300 python $B/bench_sparse.py --quick --fp8" \
  "timeout 300 python $B/bench_sparse.py --quick --fp8" \
  "MLA_WRAPPER_GATHER_L2_PREFETCH=1 timeout 300 python $B/bench_sparse.py --quick --fp8" \
  "timeout 300 python $B/bench_sparse.py --quick --fp8"
