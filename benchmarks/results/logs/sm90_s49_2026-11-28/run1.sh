#!/usr/bin/env bash
# Session 49, device call 1 (one H200): the e4m3 widening (dequant_tile) with a half-warp reading
# one token's 128-byte raw row (lanes 0-7 its first 64 columns, 8-15 the others) instead of two
# tokens' same halves (rows 128 bytes apart: two wavefronts a half-warp). Candidate builds:
# e4rows (dense e4m3, bf16 queries), e4rows_sp (sparse e4m3); baseline: the warmup libraries of
# 13fe8a8. Checks of the candidate over the fp8 cache + A/B at page 64 (TMA) and page 1
# (cp.async), the sparse fp8 rows' A/B, per-tile traces of both at page 64 H=16 B=128.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-60} bash $B/device_run.sh \
  "timeout 200 $C --page 64 --variant=lib:$V/e4rows/{dt}.so" \
  "timeout 120 $C --ab-only --page 1 --variant=lib:$V/e4rows/{dt}.so" \
  "timeout 150 python $B/bench_sparse.py --quick --fp8 --fp8-variant='lib:$V/e4rows_sp/{dt}.so'" \
  "timeout 60 $C --page 64 --trace 16 128 16384 --variant=lib:$V/trace_base/{dt}.so" \
  "timeout 60 $C --page 64 --trace 16 128 16384 --variant=lib:$V/trace_rows/{dt}.so" \
  "timeout 120 $C --ab-only --page 64 --variant=lib:$V/e4rows/{dt}.so"
