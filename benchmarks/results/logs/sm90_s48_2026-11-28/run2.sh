#!/usr/bin/env bash
# Session 48, device call 2 (one GPU): run 1's third-stage probe (ds3) ran the fp8_ds_mla rows no
# faster (0.99-1.06x the time). Per-tile traces (-DMLAW_SM90_TRACE=1) of the shipped fp8_ds_mla
# library and of the probe, to see where a tile's time goes when the copies are issued a tile
# earlier.
B=benchmarks
V=".cache/variant"
TAIL=${TAIL:-200} bash $B/device_run.sh \
  "timeout 400 python $B/bench_sparse.py --quick --ds-mla --ds-trace='lib:$V/trace_ds/{dt}.so;lib:$V/trace_ds3/{dt}.so'"
