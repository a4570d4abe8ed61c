#!/usr/bin/env bash
# Session 47, device call 7 (one GPU): run 6: with the gather-mode vote the scorer's wait moved
# from "S done -> max barrier" to "first half of P" and the tile period stayed ~3920 clocks
# (dense ~3500). Probes of what the consumers' gather work costs: no L2 prefetch of tile i + 2's
# rows (nopf, MLAW_SM90_GATHER_L2PF=0) and no slot-id lookups either (nolookup,
# MLAW_SM90_PROBE_NO_LOOKUP=1: every slot valid, as in bench_sparse), the vote again; traces of
# both probes.
B=benchmarks
V=".cache/variant"
TAIL=${TAIL:-400} bash $B/device_run.sh \
  "timeout 400 python $B/bench_sparse.py --variant='lib:$V/nopf/{dt}.so;lib:$V/nolookup/{dt}.so;lib:$V/vote/{dt}.so' --trace='lib:$V/trace_nopf/{dt}.so;lib:$V/trace_nolookup/{dt}.so'"
