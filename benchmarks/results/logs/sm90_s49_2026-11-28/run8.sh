#!/usr/bin/env bash
# Session 49, device call 8 (one H200): the final tree's sparse e4m3 libraries (their widening
# changed in b97c316) under compute-sanitizer: memcheck and racecheck on small sparse fp8 cases
# with bf16 and fp16 queries (run 2 ran both tools on the dense kernel's small fp8 cases).
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
K="test_wrapper_fp8_cache and (bf16-16-1-2048 or bf16-64-32-256 or fp16-32-7-4097)"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "$S --tool memcheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'" \
  "$S --tool racecheck python -m pytest -q -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'"
