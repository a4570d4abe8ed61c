#!/usr/bin/env bash
# Session 51, device call 4 (one H200): run 3's fp8 grid again (run 3's decode.jsonl was
# overwritten on the device before it came back; its printed table is in run3/step4.log), and the
# sweep. Same build (622a7cd), bf16 libraries only (the rest parked to fit the carry).
B=benchmarks
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 240 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --tag s51-h200-fp8" \
  "timeout 200 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --cases sweep --tag s51-h200-sweep"
