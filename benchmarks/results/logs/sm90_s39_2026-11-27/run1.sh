#!/usr/bin/env bash
# Session 39, device call 1: the final tree of session 38 (f1f805c: early Q as its own kernel
# instance, the review's launcher helper) had not run on a device. The 14 checks, the tests of
# the instance split, A/B against -DMLAW_SM90_EARLY_Q=0 on the split rows (B=1: the same
# instance both ways, expect 1.0) and the items rows (speedup < 1: early Q faster), memcheck /
# racecheck, the GPU suite, the grid against fa3 and FlashMLA, a trace of H=128 B=512 L=512.
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$dev" in *H200*) tag=s39-h200-final ;; *) tag=s39-h100-final ;; esac
C="python $B/check_sm90_dev.py --ab-only --variant=-DMLAW_SM90_EARLY_Q=0"
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 300 compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py -x -k 'many_items or small_batch or many_merge'" \
  "$C --ab-cases split" "$C --ab-cases items" \
  "python $B/check_sm90_dev.py --trace 128 512 512 --variant=-DMLAW_SM90_TRACE=1" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_wrapper.py -x -k 'many_items and bf16'" \
  "timeout 280 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases middle,latency,compute,memory --tag $tag"
