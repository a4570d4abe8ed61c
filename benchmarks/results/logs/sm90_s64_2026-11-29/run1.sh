#!/usr/bin/env bash
# Session 64, device call 1 (one H200): where the host time of plan() and run() goes on the
# device's VM (BENCHMARKS.md: plan() <= 15 us at B=128, run() <= 6 us a call; last measured
# 2026-11-27: sm90 plan 26-71 us, run 14-18 us, fa3 run ~12): bench_host with FlashInfer
# 0.5.3's fa3 beside it, its breakdown and cProfile, and the planner core alone (bench_plan).
B=benchmarks
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 python $B/bench_host.py --backend sm90" \
  "timeout 120 python $B/bench_host.py --breakdown --backend sm90" \
  "timeout 120 python $B/bench_host.py --profile" \
  "timeout 120 python $B/bench_plan.py --calls 1000 --batches 1,32,128,512 --no-write"
