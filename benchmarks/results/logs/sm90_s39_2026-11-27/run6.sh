#!/usr/bin/env bash
# Session 39, device call 6 (asks for an H200): the final tree (kernel SASS that of session
# 38's f1f805c; runs 2-5's prefetch and policy builds not kept): checks, the instance and merge
# tests, the grid against fa3 and FlashMLA.
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$dev" in *H200*) tag=s39-h200-final ;; *) tag=s39-h100-final2 ;; esac
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -x -k 'many_items or small_batch or many_merge'" \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases middle,latency,compute,memory --tag $tag"
