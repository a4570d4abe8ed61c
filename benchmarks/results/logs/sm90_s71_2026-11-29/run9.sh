#!/usr/bin/env bash
# Session 71, device call 9 (two H200s): the 2-GPU tests on this session's libraries (every one
# rebuilt for MlaRunArgs.lse_seq_tokens), with the new dense FlashMLA call on the second GPU.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-12} bash benchmarks/device_run.sh \
  "nvidia-smi -L" \
  "timeout 240 python -m pytest tests/test_multi_gpu.py tests/test_distributed.py -m gpu -q -rfs -p no:cacheprovider"
