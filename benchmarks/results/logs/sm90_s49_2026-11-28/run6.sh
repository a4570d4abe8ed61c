#!/usr/bin/env bash
# Session 49, device call 6 (one H200): the final tree's whole GPU suite (the e4m3 libraries new
# since session 48's run 4, every other sm90 library's SASS unchanged).
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 500 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
