#!/usr/bin/env bash
# Session 72, device call 10 (one H200): direct balanced plans (one request a group, request-
# aligned pieces) skip step 3's searches (run 8's probe: step 3 ~3700 of ~10k clocks at B=64
# H=128). Probe, plan kernels' GPU time, the dense / cutlass / large-cache tests, racecheck,
# the routed call and the dense call on the grid.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-24} bash benchmarks/device_run.sh \
  "timeout 60 python benchmarks/micro/balanced_plan_probe.py .cache/probe/balanced_plan_probe.so" \
  "timeout 60 python benchmarks/bench_plan.py --gpu" \
  "timeout 200 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py tests/test_large_cache.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 60 compute-sanitizer --tool racecheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'invariants and sm90 and not lens8- and not lens17-'" \
  "timeout 70 python benchmarks/bench_decode.py --backends sm90,sm90_cutlass,sm90_fmla,fi_fa3 --heat-s 3 --tag s72-h200-routed-direct --budget-s 60"
