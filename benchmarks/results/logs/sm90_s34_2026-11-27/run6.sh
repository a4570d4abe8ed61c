#!/usr/bin/env bash
# Session 34, device call 6: a CTA's first whole-page KV tile (SPEC_PREFETCH=1) or first two
# (=2) prefetched into L2 before the grid-dependency wait, from a speculative read of the page
# ids: the 14 checks on the variant, then A/Bs after do_bench's flush, after a read flush, and
# with a copy kernel writing q before each call (--preceded: B=1 graphs too). On an H200 the
# shipped build's grid first.
B=benchmarks
V1="--variant=-DMLAW_SM90_SPEC_PREFETCH=1"
V2="--variant=-DMLAW_SM90_SPEC_PREFETCH=2"
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
GRID=true  # on an H200 first the shipped build's grid (no H200 came in runs 1-5)
case "$dev" in *H200*) GRID="python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s34-h200-final" ;; esac
TAIL=${TAIL:-40} bash $B/device_run.sh "$GRID" \
  "python $B/check_sm90_dev.py $V1 --ab-cases memory" \
  "python $B/check_sm90_dev.py $V1 --ab-only --ab-cases memory --flush clean" \
  "python $B/check_sm90_dev.py $V1 --ab-only --ab-cases split --preceded" \
  "python $B/check_sm90_dev.py $V2 --ab-only --ab-cases memory" \
  "python $B/check_sm90_dev.py $V2 --ab-only --ab-cases split --preceded"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
