#!/usr/bin/env bash
# Session 48, device call 6 (one H200): runs 2-3's traces of later rows held stale tiles of the
# first traced row (the trace buffer was not cleared between launches; fixed: trace_read clears
# it). Clean traces of the fp8_ds_mla rows: the shipped build (trace_ds), the 80 / 208 control
# (trace_r80) and the two-phase widening (trace_ds16r, ds_phases16.patch).
B=benchmarks
V=".cache/variant"
TAIL=${TAIL:-300} bash $B/device_run.sh \
  "timeout 400 python $B/bench_sparse.py --quick --ds-mla --ds-trace='lib:$V/trace_ds/{dt}.so;lib:$V/trace_r80/{dt}.so;lib:$V/trace_ds16r/{dt}.so'"
