#!/usr/bin/env bash
# Session 66, device call 5 (one H200): the harness's new A/A control (--variant=lib:self: a copy
# of the JIT cache's library loaded as a second library), on the tp4 set (run 4's A/A there used
# a copied file by path) and on the 16-bit cache's memory and middle rows.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --variant=lib:self"
TAIL=${TAIL:-30} bash $B/device_run.sh "timeout 80 $C --fp8 --ab-cases tp4" \
  "timeout 80 $C --ab-cases memory"
