#!/usr/bin/env bash
# Session 71, device call 3 (one H200): the rest of the GPU suite on run 2's libraries (every
# library rebuilt for MlaRunArgs.lse_seq_tokens; run 2 ran the dense, sparse and cutlass tests).
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-8} bash benchmarks/device_run.sh \
  "timeout 150 python -m pytest tests/test_wrapper.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 130 python -m pytest tests/test_fp8_kv.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 200 python -m pytest tests -m gpu -q -rfs -p no:cacheprovider --ignore=tests/test_wrapper.py --ignore=tests/test_flashmla_dense.py --ignore=tests/test_sparse.py --ignore=tests/test_fp8_kv.py --ignore=tests/test_cutlass_mla_api.py"
