#!/usr/bin/env bash
# Session 41, device call 7 (asked for an H200): the final tree's fp8 tests after their fixtures
# moved to test_wrapper (tests/test_fp8_kv.py, test_sm90_backend.py, test_torch_ops.py on the
# GPU); on an H200 also the grid with sm90 / sm90_fp8 / fa3 (s41-h200-fp8) and the full grid
# with every peer (s41-h200-full).
B=benchmarks
T="timeout 150 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py tests/test_sm90_backend.py tests/test_torch_ops.py"
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$dev" in
*H200*) TAIL=${TAIL:-40} bash $B/device_run.sh "$T" \
  "timeout 120 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases middle,latency,compute,memory --tag s41-h200-fp8" \
  "timeout 150 python $B/bench_decode.py --backends sm90,sm80,fi_fa2,fi_fa3,flashmla --tag s41-h200-full" ;;
*) TAIL=${TAIL:-20} bash $B/device_run.sh "$T" ;;
esac
