#!/usr/bin/env bash
# Session 73, device call 4 (one H200): the rest of the GPU suite on the final libraries.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-8} bash benchmarks/device_run.sh \
  "timeout 120 python -m pytest tests/test_fp8_kv.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 200 python -m pytest tests -m gpu -q -rfs -p no:cacheprovider --ignore=tests/test_wrapper.py --ignore=tests/test_flashmla_dense.py --ignore=tests/test_sparse.py --ignore=tests/test_fp8_kv.py --ignore=tests/test_cutlass_mla_api.py" \
  "timeout 100 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py -m gpu -q -rfs -p no:cacheprovider"
