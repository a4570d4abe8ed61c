#!/usr/bin/env bash
# Session 72, device call 6 (one H200): the balanced plan keeps lengths and prefixes in shared
# memory for batches of <= 1024 requests and reduces its two maxima at once (run 5's probe:
# ~1000 clocks a phase waiting on scratch / seq_lens loads, 15.6k clocks in all at B=1).
# Probe, the plan-invariant and routed tests, racecheck, the plan kernels' GPU time.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-14} bash benchmarks/device_run.sh \
  "timeout 60 python benchmarks/micro/balanced_plan_probe.py .cache/probe/balanced_plan_probe.so" \
  "timeout 200 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 100 compute-sanitizer --tool racecheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'invariants and sm90 and not lens8- and not lens17-'" \
  "timeout 60 python benchmarks/bench_plan.py --gpu"
