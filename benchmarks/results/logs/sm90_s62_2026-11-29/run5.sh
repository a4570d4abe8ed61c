#!/usr/bin/env bash
# Session 62, device call 5 (one H200): where the e4m3 wide instance's tile (period ~3758 clocks
# at H=128 B=64 L=4096, run 3) loses to the 16-bit kernel's: per-tile traces of the landed
# libraries built with -DMLAW_SM90_TRACE=1 (.cache/variant/tr16: bf16 cache, tr8: e4m3 cache), at
# pages 64 and 16.
B=benchmarks
T="python $B/check_sm90_dev.py --trace 128 64 4096"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 60 $T --page 64 --variant=lib:.cache/variant/tr16/{dt}.so" \
  "timeout 60 $T --page 64 --fp8 --variant=lib:.cache/variant/tr8/{dt}.so" \
  "timeout 60 $T --page 16 --variant=lib:.cache/variant/tr16/{dt}.so" \
  "timeout 60 $T --page 16 --fp8 --variant=lib:.cache/variant/tr8/{dt}.so"
