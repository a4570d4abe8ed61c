#!/usr/bin/env bash
# Session 33, device call 15 (asked for an H200 again: runs 5-14 but 12 got H100s;
# the tag names the device that came): the
# shipped build (with programmatic dependent launch). On an H200: the checks, memcheck and racecheck on the small cases,
# the full grid, the middle / memory / latency rows after a read flush, the GPU suite. On an
# H100 (runs 5-14 verified it there): nothing more (a quick exit).
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$dev" in *H200*) d=h200 ;; *) d=h100 ;; esac
if [ $d = h200 ]; then
  TAIL=${TAIL:-14} bash $B/device_run.sh \
    "python $B/check_sm90_dev.py" \
    "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 280 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
    "timeout 280 compute-sanitizer --tool racecheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
    "python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s33-h200-final" \
    "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --flush clean --cases middle,memory,latency --tag s33-h200-clean" \
    "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
else
  TAIL=${TAIL:-14} bash $B/device_run.sh "nvidia-smi --query-gpu=name --format=csv,noheader"
fi
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
