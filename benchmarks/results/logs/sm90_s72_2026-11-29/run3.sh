#!/usr/bin/env bash
# Session 72, device call 3 (one H200): where the routed cutlass_mla_decode's extra time goes
# (run 2: B=1 graphs +15-33 us, middle rows ~2.5x the wrapper): the GPU plan kernels alone in
# CUDA graphs (bench_plan.py --gpu) and the drop-in calls' host cost (bench_host.py --api).
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-40} bash benchmarks/device_run.sh \
  "timeout 120 python benchmarks/bench_plan.py --gpu" \
  "timeout 150 python benchmarks/bench_host.py --api"
