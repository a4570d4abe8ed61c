#!/usr/bin/env bash
# Session 34, device call 11: what pacing does in each regime. The shipped build (paced KV loads
# where a busy grid's CTAs have short items) against the same build without pacing
# (-DMLAW_SM90_PACED_HEADS=0) on the paced cases: after do_bench's flush (50 MB of dirty lines),
# after a read flush (clean lines), and after a read flush with a copy kernel writing q before each
# call (--preceded: what a model's layer loop looks like). Speedup > 1: unpaced faster.
B=benchmarks
V="--variant=-DMLAW_SM90_PACED_HEADS=0"
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
GRID=true  # on an H200 first the shipped build's grid (none came in runs 1-10)
case "$dev" in *H200*) GRID="python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s34-h200-final" ;; esac
TAIL=${TAIL:-40} bash $B/device_run.sh "$GRID" \
  "python $B/check_sm90_dev.py $V --ab-only --ab-cases paced" \
  "python $B/check_sm90_dev.py $V --ab-only --ab-cases paced --flush clean" \
  "python $B/check_sm90_dev.py $V --ab-only --ab-cases paced --preceded --flush clean"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
