#!/usr/bin/env bash
# Session 34, device call 1: the shipped build (0ce2f5f, not yet run on a GPU). On an H200: the
# 14 checks, memcheck on the small cases, the full grid (s34-h200-final), the GPU suite, and
# racecheck if time is left. On an H100: checks, memcheck, racecheck, suite; with H100_QUICK=1
# (runs 2-4, which asked for an H200 again) a quick exit.
B=benchmarks
date +%s > /tmp/t0
left() { [ $(( $(date +%s) - $(cat /tmp/t0) )) -lt $1 ]; }
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$dev" in *H200*) d=h200 ;; *) d=h100 ;; esac
MC="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small"
RC="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool racecheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small"
if [ $d = h200 ]; then
  TAIL=${TAIL:-30} bash $B/device_run.sh \
    "python $B/check_sm90_dev.py" "$MC" \
    "python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s34-h200-final" \
    "timeout 240 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
    "$(declare -f left); left 470 && $RC || echo skipped racecheck: no time"
elif [ "${H100_QUICK:-0}" = 1 ]; then
  TAIL=4 bash $B/device_run.sh "nvidia-smi --query-gpu=name --format=csv,noheader"
else
  TAIL=${TAIL:-30} bash $B/device_run.sh \
    "python $B/check_sm90_dev.py" "$MC" "$RC" \
    "timeout 240 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
fi
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
