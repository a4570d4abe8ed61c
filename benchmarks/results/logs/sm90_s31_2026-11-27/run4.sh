#!/usr/bin/env bash
# Session 31, device call 4 (H200): the final commit: the full grid with the five backends
# (tag s31-h200-final) and the GPU suite.
B=benchmarks
TAIL=${TAIL:-8} bash $B/device_run.sh \
  "python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s31-h200-final" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
