#!/usr/bin/env bash
# Session 67, device call 8 (one H200): the grid with the tall MTP plans on by default, our
# bf16 path, our e4m3 path and FlashInfer 0.5.3's fa3 in one process (tag s67-h200-fp8).
B=benchmarks
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-45} bash $B/device_run.sh \
  "timeout 270 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --tag s67-h200-fp8"
