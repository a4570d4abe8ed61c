#!/usr/bin/env bash
# Session 69, device call 3 (one H200): the full decode grid of the shipped build (kernels as
# session 67's) with every peer in one process (sm90, sm90_fp8, sm80, FlashInfer fa2 / fa3,
# FlashMLA from benchmarks/fetch_flashmla.sh), for the README's table, and the off-grid sweep.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
B=benchmarks
TAIL=${TAIL:-45} bash $B/device_run.sh \
  "timeout 240 python $B/bench_decode.py --backends sm90,sm90_fp8,sm80,fi_fa2,fi_fa3,flashmla --tag s69-h200-full" \
  "timeout 120 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases sweep --tag s69-h200-sweep"
