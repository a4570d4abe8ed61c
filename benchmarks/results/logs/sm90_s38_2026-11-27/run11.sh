#!/usr/bin/env bash
# Session 38, device call 11: the final tree's GPU suite and the decode grid against fa3.
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$dev" in *H200*) tag=s38-h200-final ;; *) tag=s38-h100-final ;; esac
TAIL=${TAIL:-24} bash $B/device_run.sh \
  "timeout 280 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle,latency,compute,memory --tag $tag"
cp ${MLA_WRAPPER_RESULTS_DIR:-/tmp/out}/*.jsonl $OUT/ 2>/dev/null
