#!/usr/bin/env bash
# Session 51, device call 5 (one H200): the whole GPU suite on 622a7cd's libraries (the e4m3
# libraries new: the narrow instance; every other sm90 library's SASS as session 50's).
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 540 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
