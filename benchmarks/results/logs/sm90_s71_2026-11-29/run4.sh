#!/usr/bin/env bash
# Session 71, device call 4 (one H200): the shipped build (every library rebuilt in run 2 for
# MlaRunArgs.lse_seq_tokens) on the whole grid with every peer, then the sweep against fa3.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
B=benchmarks
TAIL=${TAIL:-45} bash $B/device_run.sh \
  "timeout 260 python $B/bench_decode.py --backends sm90,sm90_fmla,sm90_fp8,sm80,fi_fa2,fi_fa3,flashmla --tag s71-h200-full" \
  "timeout 120 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases sweep --tag s71-h200-sweep"
