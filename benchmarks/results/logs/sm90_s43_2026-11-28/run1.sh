#!/usr/bin/env bash
# Session 43, device call 1 (one GPU): the whole GPU suite on main at 98fd48c (the reference's
# fp8 dequantization with ckv_scale / kpe_scale and check_sm90_dev's run_cache were CPU-checked
# only in session 42).
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 330 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "timeout 60 python $B/check_sm90_dev.py --fp8 2>&1 | tail -20"
