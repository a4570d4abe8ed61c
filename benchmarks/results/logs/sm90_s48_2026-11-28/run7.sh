#!/usr/bin/env bash
# Session 48, device call 7 (one H200): the fp8_ds_mla widening reads each raw row 8 bytes a lane,
# 4 tokens a warp at a 128-byte pitch, so a half-warp's two tokens hit the same banks (two
# wavefronts a half-warp). Candidate: an odd token's raw row lands with its 64-byte halves swapped
# (-DMLAW_SM90_DS_RAW_SWIZZLE=1: the producer's cp.async destinations and the widening's reads),
# conflict-free. A/B against the shipped library on the same tensors, twice, and traces of both.
B=benchmarks
V=".cache/variant"
TAIL=${TAIL:-300} bash $B/device_run.sh \
  "timeout 300 python $B/bench_sparse.py --quick --ds-mla --ds-variant='lib:$V/dsswz/{dt}.so' --ds-trace='lib:$V/trace_ds/{dt}.so;lib:$V/trace_dsswz/{dt}.so'" \
  "timeout 300 python $B/bench_sparse.py --quick --ds-mla --ds-variant='lib:$V/dsswz/{dt}.so'"
