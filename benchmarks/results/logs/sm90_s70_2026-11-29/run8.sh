#!/usr/bin/env bash
# Session 70, device call 8 (one H200): the sparse wrapper asks the kernels for FlashMLA's +inf
# lse (lse_base_e = 2) instead of an in-place nan_to_num_ after each call: the sparse tests.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-8} bash benchmarks/device_run.sh \
  "timeout 120 python -m pytest tests/test_sparse.py tests/test_flashmla_dense.py -m gpu -q -rfs -p no:cacheprovider -x"
