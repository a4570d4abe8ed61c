#!/usr/bin/env bash
# Session 33, device call 17 (H100): the full grid of the shipped build (programmatic dependent
# launch on; each timed call follows do_bench's flush kernel), tag s33-h100-pdl.
B=benchmarks
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s33-h100-pdl"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
