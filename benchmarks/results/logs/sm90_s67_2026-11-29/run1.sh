#!/usr/bin/env bash
# Session 67, device call 1 (one H200): the mma.sync micro with the narrow tiles' operand paths
# (benchmarks/micro/mma_sync_rates.cu), and session 66's `--variant=lib:self` in its final
# per-process form (826f4ad, not yet run on a device) as A/A sets on the rows where the slot
# bias showed (fp8 tp4 and narrow).
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --fp8"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a $B/micro/mma_sync_rates.cu -o /tmp/mma_rates && /tmp/mma_rates" \
  "timeout 100 $C --ab-cases tp4 --variant=lib:self" \
  "timeout 100 $C --ab-cases narrow --variant=lib:self"
