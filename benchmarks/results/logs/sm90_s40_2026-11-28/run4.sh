#!/usr/bin/env bash
# Session 40, device call 4 (asked for an H200): on an H200, the shipped tree there (the latest
# H200 runs are session 37's tree and session 38's A/Bs): the 14 checks, memcheck / racecheck on
# the small cases, the GPU suite, the full grid with every peer (s40-h200-full). On an H100, the
# off-grid sweep (35 shapes) of the shipped build against fa3 and FlashMLA (s40-h100-sweep;
# session 37's was the last on an H100).
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 300 compute-sanitizer --error-exitcode 1"
case "$dev" in
*H200*) TAIL=${TAIL:-40} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "python $B/bench_decode.py --backends sm90,sm80,fi_fa2,fi_fa3,flashmla --tag s40-h200-full" \
  "timeout 280 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" ;;
*) TAIL=${TAIL:-45} bash $B/device_run.sh \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases sweep --tag s40-h100-sweep" ;;
esac
