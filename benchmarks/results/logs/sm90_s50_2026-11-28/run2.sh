#!/usr/bin/env bash
# Session 50, device call 2 (one H200): per-tile traces at B=1 L=1024 (H=128 and H=16, page 64)
# of acb0c9b's e4m3 kernel (trace_base) and of the unscaled Q path (trace_new), bf16 queries:
# event 29 (Q converted) against 18 (Q landed); then the fp8 rows of the grid and the sweep
# beside our bf16 path and FlashInfer fa3 (the README's fp8 table), the jit cache holding
# 885a7a3's libraries.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-60} bash $B/device_run.sh \
  "timeout 60 $C --page 64 --trace 128 1 1024 --variant=lib:$V/trace_base/{dt}.so" \
  "timeout 60 $C --page 64 --trace 128 1 1024 --variant=lib:$V/trace_new/{dt}.so" \
  "timeout 60 $C --page 64 --trace 16 1 1024 --variant=lib:$V/trace_base/{dt}.so" \
  "timeout 60 $C --page 64 --trace 16 1 1024 --variant=lib:$V/trace_new/{dt}.so" \
  "timeout 200 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --tag s50-h200-fp8" \
  "timeout 90 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases sweep --tag s50-h200-sweep"
