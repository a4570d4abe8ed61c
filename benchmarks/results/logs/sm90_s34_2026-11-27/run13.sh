#!/usr/bin/env bash
# Session 34, device call 13 (the H200 of run 12, still warm): the middle and B=1 rows twice
# more (tag s34-h200-middle) and once after a read flush (s34-h200-clean), for the spread of the
# H=16 B=16 L=4096 row; then run 11's pacing A/B on this H200 (after do_bench's flush, after a
# read flush, after a read flush with a copy kernel writing q first; speedup > 1: unpaced faster).
B=benchmarks
V="--variant=-DMLAW_SM90_PACED_HEADS=0"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "nvidia-smi --query-gpu=name --format=csv,noheader" \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases middle,latency --tag s34-h200-middle" \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases middle,latency --tag s34-h200-middle" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle --flush clean --tag s34-h200-clean" \
  "python $B/check_sm90_dev.py $V --ab-only --ab-cases paced" \
  "python $B/check_sm90_dev.py $V --ab-only --ab-cases paced --flush clean" \
  "python $B/check_sm90_dev.py $V --ab-only --ab-cases paced --preceded --flush clean"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
