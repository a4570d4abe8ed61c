#!/usr/bin/env bash
# Session 35, device call 10 (the H100 of a quick exit, warm): the tree at this session's end
# (kernel and Python unchanged since e0e7ad9): the 14 checks, memcheck and racecheck on the
# small cases, the GPU suite.
B=benchmarks
MC="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small"
RC="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool racecheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small"
TAIL=${TAIL:-8} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" "$MC" "$RC" \
  "timeout 240 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
