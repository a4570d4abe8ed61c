#!/usr/bin/env bash
# Session 35, device call 8: does the math slow the short H=16 rows through the clock? The
# kernel and its no-math probe back to back for 4 s each at H=16 B=16 L=4096 (no flush), with
# nvidia-smi's clock, power and throttle reasons (fa3 and FlashMLA beside them).
B=benchmarks
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PROBE_NO_MATH=1 --power 16 16 4096 --tag s35-h16-nomath-power"
