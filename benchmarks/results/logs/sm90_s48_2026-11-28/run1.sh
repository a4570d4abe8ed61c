#!/usr/bin/env bash
# Session 48, device call 1 (one GPU): what a third KV stage would buy the sparse kernel, before
# building one. Probes (wrong results): -DMLAW_SM90_PROBE_STAGES3=1 puts a third 72 KB stage over
# the Q tile, for the 16-bit gather library (s3) and the fp8_ds_mla one (ds3); same tensors,
# same process as the shipped libraries (bench_sparse --quick --ds-mla: H=128/64 rows and the
# H=16 decode rows).
B=benchmarks
V=".cache/variant"
TAIL=${TAIL:-60} bash $B/device_run.sh \
  "timeout 400 python $B/bench_sparse.py --quick --ds-mla --variant='lib:$V/s3/{dt}.so' --ds-variant='lib:$V/ds3/{dt}.so'"
