#!/usr/bin/env bash
# Session 46, device call 7 (one GPU): flash_mla_with_kvcache (FlashMLA's sparse decode call over
# the sparse wrapper; kernels unchanged since run 5): the sparse GPU tests, memcheck on its fp8
# rows and CUDA-graph cases.
B=benchmarks
S="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --error-exitcode 1"
K="flash_mla_with_kvcache and (sm90 and (True-3-2-64-300 or cuda_graph))"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py" \
  "$S --tool memcheck python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py -k '$K'"
