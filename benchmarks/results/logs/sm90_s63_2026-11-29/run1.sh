#!/usr/bin/env bash
# Session 63, device call 1 (one H200): why B=1 over an e4m3 cache replays 0.87-0.94x as fast as
# over the 16-bit cache (s61-h200-fp8: 10.6 / 12.4 / 15.5 / 16.5 us against 9.7 / 11.3 / 13.5 /
# 15.6 at H=16 / 128, L=1024 / 4096), where the data sits in L2 (back-to-back replays): each
# kernel's time inside CUDA-graph replays (attention, combine), then the per-CTA traces of the
# landed libraries built with -DMLAW_SM90_TRACE=1 (.cache/variant/tr16: bf16 cache, tr8: e4m3).
B=benchmarks
C="python $B/check_sm90_dev.py"
steps=()
for hl in "16 1 1024" "128 1 1024" "16 1 4096" "128 1 4096"; do
  steps+=("timeout 90 $C --timeline $hl --fp8")
done
for hl in "16 1 1024" "128 1 1024" "16 1 4096"; do
  steps+=("timeout 60 $C --trace $hl --variant=lib:.cache/variant/tr16/{dt}.so")
  steps+=("timeout 60 $C --trace $hl --fp8 --variant=lib:.cache/variant/tr8/{dt}.so")
done
TAIL=${TAIL:-40} bash $B/device_run.sh "${steps[@]}"
