#!/usr/bin/env bash
# Session 37, device call 9, on run 8's warm H200: the compute rows (run 8's grid had them
# 0.92-1.08x fa3, session 34's 1.02-1.10x on the same kind of device) A/B'd against session 36's
# kernel and measured twice more against fa3; then the GPU suite on the H200.
B=benchmarks
O="--variant=lib:.cache/old_s36/{dt}.so --ab-only"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py $O --ab-cases compute" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases compute --tag s37-h200-compute" \
  "python $B/bench_decode.py --backends fi_fa3,sm90 --cases compute --tag s37-h200-compute" \
  "timeout 240 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
