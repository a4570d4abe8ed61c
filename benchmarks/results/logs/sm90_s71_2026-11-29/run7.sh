#!/usr/bin/env bash
# Session 71, device call 7 (one H200): the shipped build's whole grid with every peer under the
# script's new default (5 s of matmuls before the ceilings and the first case: run 4's first
# compute row had met a cool chip).
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
B=benchmarks
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 300 python $B/bench_decode.py --backends sm90,sm90_fmla,sm90_fp8,sm80,fi_fa2,fi_fa3,flashmla --tag s71-h200-full-heat"
