#!/usr/bin/env bash
# Session 33, device call 20 (asked for an H200 once more; the tag names the device): on an
# H200, the shipped build's checks, memcheck on the small cases, the full grid
# (s33-h200-final) and the GPU suite; on an H100, nothing (a quick exit).
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$dev" in *H200*) d=h200 ;; *) d=h100 ;; esac
if [ $d = h200 ]; then
  TAIL=${TAIL:-40} bash $B/device_run.sh \
    "python $B/check_sm90_dev.py" \
    "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 280 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
    "python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s33-h200-final" \
    "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
else
  TAIL=${TAIL:-4} bash $B/device_run.sh "nvidia-smi --query-gpu=name --format=csv,noheader"
fi
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
