#!/usr/bin/env bash
# Session 71, device call 8 (one H200): the dense FlashMLA-API path timed before the wrapper
# (runs 1-2 had it second: 0.95-0.97x the wrapper on a few rows; runs 5-6 found the order worth
# 2-5% at the power cap).
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
B=benchmarks
TAIL=${TAIL:-50} bash $B/device_run.sh \
  "timeout 120 python $B/bench_decode.py --backends sm90_fmla,sm90 --cases compute,memory,middle,mtp,ragged,ragged_mtp,sweep --tag s71-h200-fmla-first"
