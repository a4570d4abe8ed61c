#!/usr/bin/env bash
# Session 64, device call 2 (one H200): how far apart the CTAs of the memory-bound rows end
# (what run-time balancing could gain there): --spans of one cold run (do_bench's dirty flush)
# of the landed kernels built with -DMLAW_SM90_TRACE=1 (.cache/variant/tr16: bf16 cache, tr8:
# e4m3), H=16 B=64 / 128 L=4096 and B=64 L=16384, 16-bit and e4m3 caches; each twice.
B=benchmarks
C="python $B/check_sm90_dev.py"
steps=()
for hl in "16 64 4096" "16 128 4096" "16 64 16384"; do
  for rep in 1 2; do
    steps+=("timeout 60 $C --spans $hl --cold --variant=lib:.cache/variant/tr16/{dt}.so")
    steps+=("timeout 60 $C --spans $hl --cold --fp8 --variant=lib:.cache/variant/tr8/{dt}.so")
  done
done
TAIL=${TAIL:-14} bash $B/device_run.sh "${steps[@]}"
