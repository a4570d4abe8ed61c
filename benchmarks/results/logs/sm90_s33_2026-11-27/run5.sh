#!/usr/bin/env bash
# Session 33, device call 5 (H200): the shipped build (8660683: on this device a paced CTA's
# second tile alone in paced boxes, the combine's plan lines prefetched by the attention CTAs,
# the evict-normal head limit a kernel constant): the checks; memcheck and racecheck on the
# small cases; the full grid (s33-h100-final); the GPU suite.
B=benchmarks
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 280 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
  "timeout 280 compute-sanitizer --tool racecheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
  "python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s33-h100-final" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
