#!/usr/bin/env bash
# Session 40, device call 3 (asked for an H200): on an H200, run 2's tree there (the latest
# H200 runs are session 37's tree): the 14 checks, memcheck / racecheck on the small cases, the
# instance and merge tests, the full grid with every peer (s40-h200-full). On an H100, each
# compute row's kernels sustained at the power cap (--power; session 33's figures predate
# sessions 34-39's kernel changes).
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 300 compute-sanitizer --error-exitcode 1"
case "$dev" in
*H200*) TAIL=${TAIL:-40} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -x -k 'many_items or small_batch or many_merge'" \
  "python $B/bench_decode.py --backends sm90,sm80,fi_fa2,fi_fa3,flashmla --tag s40-h200-full" ;;
*) TAIL=${TAIL:-12} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --power 128 64 4096 --tag s40-h100-power" \
  "python $B/check_sm90_dev.py --power 128 128 16384 --tag s40-h100-power" \
  "python $B/check_sm90_dev.py --power 128 128 4096 --tag s40-h100-power" ;;
esac
