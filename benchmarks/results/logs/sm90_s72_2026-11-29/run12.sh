#!/usr/bin/env bash
# Session 72, device call 12 (one H200): the balanced plan's memo (the routed call keeps the
# plan already in its workspace when its arguments and lengths match and the records' checksum
# holds). The dense, sparse, cutlass, torch-op and large-cache tests, racecheck and memcheck
# on the plan kernel, the plan kernels' time (kept column), the routed call on the grid.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-14} bash benchmarks/device_run.sh \
  "timeout 150 python -m pytest tests/test_flashmla_dense.py tests/test_sparse.py tests/test_cutlass_mla_api.py tests/test_torch_ops.py tests/test_large_cache.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 50 compute-sanitizer --tool racecheck python -m pytest tests/test_cutlass_mla_api.py -q -p no:cacheprovider -k 'sm90 and (kept or repeat)'" \
  "timeout 50 compute-sanitizer --tool memcheck python -m pytest tests/test_cutlass_mla_api.py -q -p no:cacheprovider -k 'sm90 and (kept or repeat or graph)'" \
  "timeout 30 python benchmarks/bench_plan.py --gpu" \
  "timeout 60 python benchmarks/bench_decode.py --backends sm90,sm90_cutlass,fi_fa3 --heat-s 2 --tag s72-h200-routed-kept --budget-s 50"
