#!/usr/bin/env bash
# Session 44, device call 7 (one GPU): the final kernels (run 6's SASS, compared instruction by
# instruction after the header's comments changed): the whole GPU suite, racecheck and memcheck
# on the small 16-bit and fp8 cases.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 330 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "$S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "$S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8"
