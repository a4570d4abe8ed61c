#!/usr/bin/env bash
# Session 57, device call 2 (one H200): the landed tree (dee88ce) through the whole GPU suite.
B=benchmarks
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 540 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
