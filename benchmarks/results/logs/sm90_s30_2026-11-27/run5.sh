#!/usr/bin/env bash
# Session 30, device call 5 (H200): the final rule (evict-normal for <= 16 heads on an H200,
# except short items on a busy grid: mla_kernel.cuh kKvFirstShort) against the old one
# (evict-first on an H200: -DMLAW_SM90_KV_NORMAL_AMPLE_HEADS=0; "speedup" < 1: the new rule is
# faster) at pages 64, 1 and 16; the checks, the full grid and the GPU suite of the final build.
OLD="-DMLAW_SM90_KV_NORMAL_AMPLE_HEADS=0"
B=benchmarks
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases boxes --variant='$OLD'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases memory --page 1 --variant='$OLD'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases memory --page 16 --variant='$OLD'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases memory --flush clean --variant='$OLD'" \
  "python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s30-h200-final" \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases memory,middle,latency --flush clean --tag s30-h200-final-clean" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
