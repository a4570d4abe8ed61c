#!/usr/bin/env bash
# Session 72, device call 11 (one H200), the final tree (plan headers' comments changed every
# library key; the routed call now switches to its tensors' GPU like the dense one): the
# dense, sparse, cutlass, torch-op and large-cache tests, memcheck on the routed paths, the
# drop-in calls' host cost.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-14} bash benchmarks/device_run.sh \
  "timeout 200 python -m pytest tests/test_flashmla_dense.py tests/test_sparse.py tests/test_cutlass_mla_api.py tests/test_torch_ops.py tests/test_large_cache.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 90 compute-sanitizer --tool memcheck python -m pytest tests/test_cutlass_mla_api.py -q -p no:cacheprovider -k 'sm90 and (repeat or one_request or graph or too_small)'" \
  "timeout 60 python benchmarks/bench_host.py --api"
