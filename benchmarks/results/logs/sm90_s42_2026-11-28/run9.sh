#!/usr/bin/env bash
# Session 42, device call 9 (one GPU): the final tree: test_fp8_kv.py's checks folded into
# test_wrapper.py's plan / check / plan_run_check (one validation helper for both caches), the
# whole GPU suite.
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 330 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
