#!/usr/bin/env bash
# Session 41, device call 3 (asked for two H200s): the latest H200 grid is session 37's build.
# On an H200: the 14 checks, memcheck / racecheck on the small cases, the full grid with every
# peer (s41-h200-full), the off-grid sweep against fa3 and FlashMLA (s41-h200-sweep), the GPU
# suite (the 2-GPU tests included). On H100s: the 14 checks only (run 2 has this session's H100 grid).
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
case "$dev" in
*H200*) TAIL=${TAIL:-45} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "python $B/bench_decode.py --backends sm90,sm80,fi_fa2,fi_fa3,flashmla --tag s41-h200-full" \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases sweep --tag s41-h200-sweep" \
  "timeout 260 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" ;;
*) TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" ;;
esac
