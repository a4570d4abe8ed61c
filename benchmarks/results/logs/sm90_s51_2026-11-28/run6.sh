#!/usr/bin/env bash
# Session 51, device call 6 (one H200): per-tile traces (-DMLAW_SM90_TRACE=1) of the e4m3 kernel
# at H=16: the narrow instance (trace51, with narrow_tiles' events: 0/7 wait, 1/8 full, 2/9
# partial scores written, 3/10 barMax, 5/12 barP, 6/13 P V done) against session 50's kernel
# (trace_old), B=128 L=16384 and B=64 L=4096, page 64.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8 --page 64"
TAIL=${TAIL:-45} bash $B/device_run.sh \
  "timeout 60 $C --trace 16 128 16384 --variant=lib:$V/trace51/{dt}.so" \
  "timeout 60 $C --trace 16 128 16384 --variant=lib:$V/trace_old/{dt}.so" \
  "timeout 60 $C --trace 16 64 4096 --variant=lib:$V/trace51/{dt}.so" \
  "timeout 60 $C --trace 16 64 4096 --variant=lib:$V/trace_old/{dt}.so"
