#!/usr/bin/env bash
# Session 47, device call 12 (one GPU): the final tree (kernels' SASS as run 8's; bench_sparse's
# prefill peer renamed): the quick sparse benchmark (prefill row with FlashMLA's sparse prefill)
# and the sparse GPU tests.
B=benchmarks
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 200 python $B/bench_sparse.py --quick" \
  "timeout 200 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_sparse.py"
