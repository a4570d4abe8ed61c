#!/usr/bin/env bash
# Session 46, device call 10 (one GPU): the fp8_ds_mla widening with a per-warp vote (a warp whose
# scales are all >= 2^-14 multiplies once, -DMLAW_SM90_DS_VOTE=1, .cache/variant/ds_vote), A/B
# against the default build on the sparse benchmark's full grid (errors per variant recorded).
B=benchmarks
TAIL=${TAIL:-80} bash $B/device_run.sh \
  "timeout 300 python $B/bench_sparse.py --ds-mla --ds-variant='lib:.cache/variant/ds_vote/{dt}.so'"
