#!/usr/bin/env bash
# Session 73, device call 5 (one H200): the balanced plan's checksum reads its five regions as
# one index space, eight words a thread in flight (was a region at a time, one word a thread:
# a chain of dependent round trips), and the memo's counts load with its other words. The
# dense and cutlass tests, racecheck and memcheck on the memo's tests, the plan kernels' time
# (kept column), the routed call on the grid.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-14} bash benchmarks/device_run.sh \
  "timeout 120 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 150 compute-sanitizer --tool racecheck python -m pytest tests/test_cutlass_mla_api.py -q -p no:cacheprovider -k 'sm90 and kept'" \
  "timeout 60 compute-sanitizer --tool memcheck python -m pytest tests/test_cutlass_mla_api.py -q -p no:cacheprovider -k 'sm90 and (kept or repeat or waits)'" \
  "timeout 30 python benchmarks/bench_plan.py --gpu" \
  "timeout 60 python benchmarks/bench_decode.py --backends sm90,sm90_cutlass,fi_fa3 --heat-s 2 --tag s73-h200-checksum --budget-s 50"
