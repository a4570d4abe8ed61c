#!/usr/bin/env bash
# Session 50, device call 3 (one H200): the final tree's whole GPU suite (the e4m3 and fp8_ds_mla
# libraries new since session 49, every 16-bit sm90 library's SASS unchanged).
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 500 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
