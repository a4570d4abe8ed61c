#!/usr/bin/env bash
# Session 73, device call 7 (one H200): run 5's checksum (one index space) back, with run 6's
# bound of one CTA an SM (78 registers). The dense and cutlass tests, memcheck on the memo's
# tests, the routed call on the grid.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-14} bash benchmarks/device_run.sh \
  "timeout 120 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 60 compute-sanitizer --tool memcheck python -m pytest tests/test_cutlass_mla_api.py -q -p no:cacheprovider -k 'sm90 and (kept or repeat or waits)'" \
  "timeout 60 python benchmarks/bench_decode.py --backends sm90,sm90_cutlass,fi_fa3 --heat-s 2 --tag s73-h200-checksum3 --budget-s 50"
