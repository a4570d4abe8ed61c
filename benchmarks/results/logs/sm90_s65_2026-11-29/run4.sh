#!/usr/bin/env bash
# Session 65, device call 7 (one H200): the fp8 grid of the final tree (the narrow plans on by
# default) with our bf16 path and FlashInfer 0.5.3's fa3 in one process (tag s65-h200-fp8),
# then the narrow A/B set a third time (64-row plans as the default, the narrow plans as the
# variant).
B=benchmarks
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 python $B/bench_decode.py --backends sm90,sm90_fp8,fi_fa3 --tag s65-h200-fp8" \
  "MLA_WRAPPER_SM90_NARROW_PLANS=0 timeout 60 python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases narrow --variant=env:MLA_WRAPPER_SM90_NARROW_PLANS=1"
