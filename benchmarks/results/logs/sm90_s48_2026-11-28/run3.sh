#!/usr/bin/env bash
# Session 48, device call 3 (one GPU): run 2's traces put the fp8_ds_mla widening at ~2400-2500
# clocks a tile (four dependent shared-memory round trips). Probe: the widening in two phases of
# 16 loads in flight (-DMLAW_SM90_DS_PHASES16=1), which needs 80 producer registers, so both the
# probe (ds16r) and its control (r80) run the 80 / 208 split (the kQTma consumers then spill 12
# bytes); timings against the shipped library and traces of both.
B=benchmarks
V=".cache/variant"
TAIL=${TAIL:-200} bash $B/device_run.sh \
  "timeout 400 python $B/bench_sparse.py --quick --ds-mla --ds-variant='lib:$V/r80/{dt}.so;lib:$V/ds16r/{dt}.so' --ds-trace='lib:$V/trace_r80/{dt}.so;lib:$V/trace_ds16r/{dt}.so'"
