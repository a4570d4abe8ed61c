#!/usr/bin/env bash
# Session 62, device call 6 (one H200): the e4m3 wide instance at page 1 (cp.async gathers, then
# the producer's widening): per-tile trace of the landed library (.cache/variant/tr8, built with
# -DMLAW_SM90_TRACE=1) at H=128 B=64 L=4096, and the 16-bit one's (tr16) beside it.
B=benchmarks
T="python $B/check_sm90_dev.py --trace 128 64 4096 --page 1"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 60 $T --fp8 --variant=lib:.cache/variant/tr8/{dt}.so" \
  "timeout 60 $T --variant=lib:.cache/variant/tr16/{dt}.so"
