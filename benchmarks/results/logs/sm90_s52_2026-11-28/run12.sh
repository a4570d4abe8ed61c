#!/usr/bin/env bash
# Session 52, device call 12 (one H200): the whole GPU test suite on the final libraries
# (796a9cf: the e4m3 narrow function new, every other sm90 function as session 51's).
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
