#!/usr/bin/env bash
# Session 72, device call 5 (one H200): the balanced plan kernel's phase clocks (probe build,
# benchmarks/micro/balanced_plan_probe.cu, carried in .cache/probe): run 4 put the kernel at
# 9-16 us a replay against the uniform plan's ~2.7.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-20} bash benchmarks/device_run.sh \
  "timeout 60 python benchmarks/micro/balanced_plan_probe.py .cache/probe/balanced_plan_probe.so"
