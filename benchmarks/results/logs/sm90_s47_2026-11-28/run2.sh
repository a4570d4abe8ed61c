#!/usr/bin/env bash
# Session 47, device call 2 (one GPU): run 1's units ran 1.03-1.14x slower than session 46's
# widening. Now the claim counter is reset by the producer (released through `raw`), so the
# consumers may skip a tile: A/B on the sparse benchmark's fp8_ds_mla rows of session 46's build,
# units without the consumers (MLAW_SM90_DS_HELP=0) and with them only where the bytes have landed
# (=2), against the default (1: always); per-tile traces of session 46's build, of 1 and of 0.
B=benchmarks
V=".cache/variant"
TAIL=${TAIL:-400} bash $B/device_run.sh \
  "timeout 400 python $B/bench_sparse.py --ds-mla --ds-variant='lib:$V/s46_ds/{dt}.so;lib:$V/help0/{dt}.so;lib:$V/help2/{dt}.so' --ds-trace='lib:$V/trace_s46/{dt}.so;lib:$V/trace1/{dt}.so;lib:$V/trace0/{dt}.so'" \
  "timeout 200 python -m pytest -q -x -rfs -p no:cacheprovider -m gpu tests/test_sparse.py -k 'ds_mla or flash_mla'"
