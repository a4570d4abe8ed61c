#!/usr/bin/env bash
# Session 62, device call 4 (one H200): the fp8-MMA instance with P as one e4m3 term (no lo:
# -DMLAW_SM90_FP8MMA_PLO=0, .cache/variant/q8p; less precise, half the P V wgmmas): its fp8
# checks (errors), and the compute and H=128 rows A/B against the default libraries (pairs off).
B=benchmarks
V=--variant=lib:.cache/variant/q8p/{dt}.so
export MLA_WRAPPER_SM90_PAIRS=0
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 150 python $B/check_sm90_dev.py --backend sm90 --fp8 $V" \
  "timeout 90 python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases compute $V"
