#!/usr/bin/env bash
# Session 31, device call 3 (H100): the shipped build: the checks; B=1 and small batches at
# pages 1 / 16 against evict-first everywhere (-DMLAW_SM90_KV_NORMAL_MAX_HEADS=0: no
# plan.counts[0] read at those pages; "speedup" < 1: the shipped build is faster); the off-grid
# sweep against fa3 and FlashMLA; the GPU suite.
OLD="-DMLAW_SM90_KV_NORMAL_MAX_HEADS=0"
B=benchmarks
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases short --page 1 --variant='$OLD'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases short --page 16 --variant='$OLD'" \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases sweep --tag s31-h100-sweep" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
