#!/usr/bin/env bash
# Session 33, device call 10. On an H200: the shipped build's checks, memcheck / racecheck on
# the small cases, full grid (s33-h200-final), read-flush rows (s33-h200-clean), GPU suite. On an
# H100 (the calls since run 5 got H100s): the H200's paced-load rule forced in this copy of the
# tree (h200_paced_rule.sed: 16-token paced boxes for a paced CTA's second tile only; its
# libraries were built on the CPU machine from the same patched source), so the H200's path
# runs the checks, memcheck / racecheck on the small cases (paced CTAs of 4 tiles) and the GPU
# suite.
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
  sed -i -f benchmarks/results/logs/sm90_s33_2026-11-27/h200_paced_rule.sed include/mla_wrapper/sm90/launcher.cuh
  TAIL=${TAIL:-14} bash $B/device_run.sh \
    "git diff --stat; grep -n 'H200.s rule forced' include/mla_wrapper/sm90/launcher.cuh" \
    "python $B/check_sm90_dev.py" \
    "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 280 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
    "timeout 280 compute-sanitizer --tool racecheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
    "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
fi
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
