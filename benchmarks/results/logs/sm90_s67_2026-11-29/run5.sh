#!/usr/bin/env bash
# Session 67, device call 5 (one H200): run 4's failure (test_fp8_tall_mtp[16-2-64-lens0-bf16]:
# lse abs error 1.09) located (dbg_mtp.py), and the rest of the new test's cases.
B=benchmarks
TAIL=${TAIL:-60} bash $B/device_run.sh \
  "timeout 120 python $B/results/logs/sm90_s67_2026-11-29/dbg_mtp.py" \
  "timeout 200 python -m pytest tests/test_fp8_kv.py -m gpu -q -k tall_mtp"
