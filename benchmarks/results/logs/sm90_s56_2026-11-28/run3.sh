#!/usr/bin/env bash
# Session 56, device call 3 (one H200): HEAD (8345ad3's kernels, the narrow items' prefetch
# rule included): the fp8 tests (the rule had not run on a device before this session's run 1),
# then the fp8 grid with our bf16 path and FlashInfer fa3 in one process (tag s56-h200-fp8),
# and a repeat of its four compute rows (our bf16 path and fa3).
B=benchmarks
TAIL=${TAIL:-50} bash $B/device_run.sh \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 300 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --tag s56-h200-fp8" \
  "timeout 200 python $B/bench_decode.py --backends sm90,fi_fa3 --cases compute --tag s56-h200-compute-rep"
