#!/usr/bin/env bash
# Session 72, device call 8 (one H200): the balanced plan with warp-scan block scans, one scan
# of (pieces, slots, merges) a chunk, and a one-chunk batch's step 3 results kept for step 4
# (run 7: warm and cold passes alike, 16k clocks at B=1: the chain of block-wide steps, not
# instruction fetch). Probe, plan kernels' GPU time, invariants, racecheck.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
TAIL=${TAIL:-24} bash benchmarks/device_run.sh \
  "timeout 60 python benchmarks/micro/balanced_plan_probe.py .cache/probe/balanced_plan_probe.so" \
  "timeout 60 python benchmarks/bench_plan.py --gpu" \
  "timeout 200 python -m pytest tests/test_flashmla_dense.py tests/test_cutlass_mla_api.py -m gpu -q -rfs -p no:cacheprovider" \
  "timeout 100 compute-sanitizer --tool racecheck python -m pytest tests/test_flashmla_dense.py -q -p no:cacheprovider -k 'invariants and sm90 and not lens8- and not lens17-'"
