#!/usr/bin/env bash
# Session 31, device call 1 (H200): the shipped build (main at 1a48c17 + bench_decode's sweep):
# the checks; memcheck and racecheck on the small cases; B=1 at pages 1 / 16 with <= 16 heads
# against the old H200 rule (-DMLAW_SM90_KV_NORMAL_AMPLE_HEADS=0: no plan.counts[0] read there;
# "speedup" < 1: the shipped build is faster); the off-grid sweep against fa3 and FlashMLA;
# (the GPU suite runs in a later call).
OLD="-DMLAW_SM90_KV_NORMAL_AMPLE_HEADS=0"
B=benchmarks
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 280 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
  "timeout 280 compute-sanitizer --tool racecheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases short --page 1 --variant='$OLD'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases short --page 16 --variant='$OLD'" \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases sweep --tag s31-h200-sweep"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
