#!/usr/bin/env bash
# Session 40, device call 6 (2 GPUs): the multi-GPU and context-parallel tests of the shipped
# tree (the last 2-GPU run was session 34's), the 4 tests the one-GPU suite skips included.
TAIL=${TAIL:-12} bash benchmarks/device_run.sh "nvidia-smi -L" \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_multi_gpu.py tests/test_distributed.py"
