#!/usr/bin/env bash
# Session 70, device call 7 (one H200): the final tree (a metadata object keeps the plans it
# replaced, for graphs captured with them): the tests of every path the session touched.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-12} bash benchmarks/device_run.sh \
  "timeout 150 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py tests/test_sparse.py tests/test_torch_ops.py tests/test_large_cache.py -m gpu -q -rfs -p no:cacheprovider"
