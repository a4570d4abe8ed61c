#!/usr/bin/env bash
# Session 34, device call 14 (the same H200, warm): the compute rows sustained at the power cap
# (sm90, fi_fa3, flashmla back to back while nvidia-smi samples clock and power; tag
# s34-h200-power) and the off-grid sweep (tag s34-h200-sweep).
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "nvidia-smi --query-gpu=name --format=csv,noheader" \
  "python $B/check_sm90_dev.py --power 128 64 4096 --tag s34-h200-power" \
  "python $B/check_sm90_dev.py --power 128 128 16384 --tag s34-h200-power" \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases sweep --tag s34-h200-sweep"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
