#!/usr/bin/env bash
# Session 49, device call 9 (one H200): after the review pass (tests/test_sparse.py's lse checks
# through one helper, check_lse_rows; the sparse wrapper's device index through _device_index;
# a kernel comment rewrapped: every sm90 library's SASS as run 6's): the sparse GPU tests.
B=benchmarks
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 400 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py"
