#!/usr/bin/env bash
# Session 34, device call 10: non-blocking L2 prefetches before the grid-dependency wait
# (-DMLAW_SM90_EARLY_L2=1, early_l2.patch): the producer's thread 0 prefetches the page-table
# line of the CTA's first page id (prefetch.global.L2), a consumer warp the first item's Q rows
# (TMA tensor prefetches); nothing waits for them. The 14 checks on the variant, then A/Bs after
# do_bench's flush, after a read flush, and with a copy kernel writing q before each call. On an H200 the
# shipped build's grid first.
B=benchmarks
V="--variant=-DMLAW_SM90_EARLY_L2=1"
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
GRID=true  # on an H200 first the shipped build's grid (none came in runs 1-9)
case "$dev" in *H200*) GRID="python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s34-h200-final" ;; esac
TAIL=${TAIL:-40} bash $B/device_run.sh "$GRID" \
  "python $B/check_sm90_dev.py $V --ab-cases memory" \
  "python $B/check_sm90_dev.py $V --ab-only --ab-cases memory --flush clean" \
  "python $B/check_sm90_dev.py $V --ab-only --ab-cases split --preceded" \
  "python $B/check_sm90_dev.py $V --ab-only --ab-cases split" \
  "python $B/check_sm90_dev.py $V --ab-only --ab-cases memory --preceded"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
