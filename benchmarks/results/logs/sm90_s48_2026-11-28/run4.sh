#!/usr/bin/env bash
# Session 48, device call 4 (two H200s, nvidia-h200-x2): the whole GPU suite on the final
# kernels (SASS identical to session 47 run 8's), with the 2-GPU tests (kernels follow the
# wrapper's device; the context-parallel torchrun test) that one-GPU machines skip.
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "nvidia-smi -L" \
  "timeout 560 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
