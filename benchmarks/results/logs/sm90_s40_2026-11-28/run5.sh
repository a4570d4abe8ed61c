#!/usr/bin/env bash
# Session 40, device call 5 (asked for an H200): the final tree (run 2's kernel: the prefetch
# condition without `!last`, which had run only the 14 checks and A/Bs): memcheck / racecheck on
# the small cases, memcheck on the many-items tests, the GPU suite; on an H200 also the full grid
# with every peer (s40-h200-full), on an H100 the grid against fa3 and FlashMLA with the table's
# new cells (s40-h100-final2).
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$dev" in
*H200*) G="python $B/bench_decode.py --backends sm90,sm80,fi_fa2,fi_fa3,flashmla --tag s40-h200-full" ;;
*) G="python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases middle,latency,compute,memory --tag s40-h100-final2" ;;
esac
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 300 compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "$S --tool memcheck python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -x -k 'many_items and bf16'" \
  "$G" \
  "timeout 280 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
