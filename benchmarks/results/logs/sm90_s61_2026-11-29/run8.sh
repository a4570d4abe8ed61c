#!/usr/bin/env bash
# Session 61, device call 8 (one H200, ~380 s of device time left): the planner's cost model
# for tall plans (fp8 H=32, MLA_WRAPPER_SM90_TALL=all so that B=1-8 run tall too), page 64.
# Variants (above 1: the variant faster): no cluster pairs (pair_merge=0), pieces of at most
# L/8 (min_chunk_div=8), no fine split of small batches (fine_split_div=0).
B=benchmarks
A="python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases tp4 --page 64"
export MLA_WRAPPER_SM90_TALL=all
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $A --variant=cost:pair_merge=0" \
  "timeout 60 $A --variant=cost:min_chunk_div=8" \
  "timeout 60 $A --variant=cost:fine_split_div=0"
