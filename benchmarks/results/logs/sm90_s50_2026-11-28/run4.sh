#!/usr/bin/env bash
# Session 50, device call 4 (one H200): what bounds the e4m3 cache at page 1 (cp.async tiles),
# where H=128 B=64 L=4096 ran 0.86x our bf16 path in run 2: per-tile traces at page 1 of the
# final e4m3 kernel (trace_new) and the 16-bit one (trace16), H=128 and H=16, B=64 L=4096, and
# the e4m3 kernel at page 64 for comparison.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $C --fp8 --page 1 --trace 128 64 4096 --variant=lib:$V/trace_new/{dt}.so" \
  "timeout 60 $C --page 1 --trace 128 64 4096 --variant=lib:$V/trace16/{dt}.so" \
  "timeout 60 $C --fp8 --page 64 --trace 128 64 4096 --variant=lib:$V/trace_new/{dt}.so" \
  "timeout 60 $C --fp8 --page 1 --trace 16 64 4096 --variant=lib:$V/trace_new/{dt}.so" \
  "timeout 60 $C --page 1 --trace 16 64 4096 --variant=lib:$V/trace16/{dt}.so"
