#!/usr/bin/env bash
# Session 55, device call 4 (one H200): the landed build (e62439b): the whole GPU suite and the
# 16-bit checks; traces of the e4m3 wgmma path (`trace`: this build with MLAW_SM90_TRACE=1) at
# H=128 and H=32 (B=64 L=4096 page 64), the rows where the fp8 cache runs 0.94-0.98x / 1.17x fa3,
# for the next step.
B=benchmarks
V=.cache/variant
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 400 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "timeout 120 python $B/check_sm90_dev.py" \
  "timeout 60 python $B/check_sm90_dev.py --fp8 --trace 128 64 4096 --variant=lib:$V/trace/{dt}.so" \
  "timeout 60 python $B/check_sm90_dev.py --fp8 --trace 32 64 4096 --variant=lib:$V/trace/{dt}.so"
