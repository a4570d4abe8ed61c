#!/usr/bin/env bash
# Session 36, device call 7 (asks for an H200): the middle and latency rows of this tree against
# fa3 in one process, after do_bench's flush (the grid's method) and after a read flush (the
# latency rows' CUDA-graph replays then also after a read flush).
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$dev" in *H200*) t=h200 ;; *) t=h100 ;; esac
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle,latency --tag s36-$t-middle" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle,latency --flush clean --tag s36-$t-clean"
