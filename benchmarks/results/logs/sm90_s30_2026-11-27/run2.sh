#!/usr/bin/env bash
# Session 30, device call 2 (H200): the full grid of the shipped build with the five backends
# after do_bench's flush and (memory / middle / latency rows) after a read flush; the GPU suite.
# (Its rows were recorded as s30-h200-final / -final-clean and retagged s30-h200-base / -base-clean
# in decode.jsonl once the L2 policy changed after this run; run 5 holds the shipped grid.)
B=benchmarks
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s30-h200-final" \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases memory,middle,latency --flush clean --tag s30-h200-final-clean" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
