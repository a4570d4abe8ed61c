#!/usr/bin/env bash
# Session 50, device call 6 (one H200): after the device-index helper moved to _validate (Python
# only; kernels as run 3's): the sparse and cache-op GPU tests, and the dense wrapper's GPU tests.
B=benchmarks
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py tests/test_cache_ops.py" \
  "timeout 250 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_wrapper.py"
