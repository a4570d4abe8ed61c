#!/usr/bin/env bash
# Session 63, device call 8 (one H200): the review's mend (the sm90 and sm80 epilogues write a
# row's lse through common/q_rows.cuh store_row_lse, the helper session 61 added for tall.cuh).
# SASS: every dense sm90 library identical; the sparse sm90 libraries store the max logit before
# the lse (one more branch); the sm80 libraries rename registers. The tests that run those
# epilogues: the sparse suite and the sm80 wrapper tests.
B=benchmarks
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py" \
  "timeout 120 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -k sm80"
