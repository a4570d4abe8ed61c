#!/usr/bin/env bash
# Session 43, device call 9 (one GPU): the final tree (f16 GEMMs for an e4m3 cache, the
# conversion of run 8; header comments; the new test of query rows far apart in magnitude):
# the whole GPU suite, racecheck on the small fp8 cases.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 330 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8"
