#!/usr/bin/env bash
# Session 35, device call 3 (the H100 of the quick exit, warm): the no-math probe after a read
# flush, and the middle rows against fa3 after a read flush (s35-h100-clean).
B=benchmarks
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PROBE_NO_MATH=1 --ab-only --ab-cases paced --flush clean" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle --flush clean --tag s35-h100-clean"
