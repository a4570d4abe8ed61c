#!/usr/bin/env bash
# Session 43, device call 7 (one GPU): run 6 put the e4m3 Q conversion at ~4000-5700 clocks a
# CTA's first item (B=1 H=16 and H=128), for ~350 SASS instructions. Traces of batches with
# several items a CTA (H=128 B=256 L=512, B=128 L=1024): is a later item's conversion (warm
# instruction cache) as slow?
B=benchmarks
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $C --fp8 --trace 128 256 512 --variant=lib:.cache/jit/e4m3trace/{dt}.so" \
  "timeout 60 $C --fp8 --trace 128 128 1024 --variant=lib:.cache/jit/e4m3trace/{dt}.so"
