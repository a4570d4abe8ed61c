#!/usr/bin/env bash
# Session 32, device call 10 (H200): the shipped build against fa3 and FlashMLA after a read
# flush (clean L2, as between a model's layers) on the middle, memory and latency rows, in one
# process.
B=benchmarks
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --flush clean --cases middle,memory,latency --tag s32-h200-clean"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
