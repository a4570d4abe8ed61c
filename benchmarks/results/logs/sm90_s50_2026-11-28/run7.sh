#!/usr/bin/env bash
# Session 50, device call 7 (two H200s): the multi-GPU tests (kernels follow the wrapper's
# device, context parallelism) after the device-index helper moved to _validate (c9e1268).
B=benchmarks
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "nvidia-smi -L" \
  "timeout 400 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_multi_gpu.py tests/test_distributed.py"
