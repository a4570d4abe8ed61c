#!/usr/bin/env bash
# Session 72, device call 7 (one H200): is the balanced plan's time its instruction fetches?
# (run 6: keeping its data in shared memory changed nothing; the kernel is ~6000 SASS
# instructions). The probe runs the plan twice in one CTA: cold pass, then warm.
TAIL=${TAIL:-24} bash benchmarks/device_run.sh \
  "timeout 60 python benchmarks/micro/balanced_plan_probe.py .cache/probe/balanced_plan_probe.so"
