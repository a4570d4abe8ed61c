#!/usr/bin/env bash
# Session 37, device call 13: the final tree off the grid (bench_decode's 35 sweep shapes,
# batch 2-512, contexts 512-65536, pages 1-256, MTP 3-4) against fa3: is any case under it?
B=benchmarks
TAIL=${TAIL:-45} bash $B/device_run.sh \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases sweep --tag s37-sweep"
