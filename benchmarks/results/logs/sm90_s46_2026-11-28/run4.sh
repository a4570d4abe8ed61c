#!/usr/bin/env bash
# Session 46, device call 4 (one GPU): the sparse benchmark's full grid with the fp8_ds_mla rows:
# the half-tile build of run 3 (default), A/B against the whole-tile build of runs 1-2
# (.cache/variant/ds_whole) and the half-tile build that widens the previous tile's second half
# before waiting for half_free (-DMLAW_SM90_DS_WIDEN_FIRST=1, .cache/variant/ds_bacd).
B=benchmarks
TAIL=${TAIL:-80} bash $B/device_run.sh \
  "timeout 400 python $B/bench_sparse.py --ds-mla --ds-variant='lib:.cache/variant/ds_whole/{dt}.so;lib:.cache/variant/ds_bacd/{dt}.so'"
